//! CEL's grammar (cel-spec `langdef`): tokens, then a recursive-descent parser with one
//! function per precedence level, into [`Expr`]. The macros (`has`, `all`, `exists`,
//! `exists_one`, `map`, `filter`, and their two-variable forms) are expanded here, as
//! cel-go's parser does, so the evaluator never sees them as calls.
//!
//! Hostile rules: the source is limited in size, and every nesting (parentheses, calls,
//! unary chains, member chains) counts against [`MAX_DEPTH`], so a rule can neither blow
//! the stack here nor in the evaluator, which recurses along the same tree.

use std::rc::Rc;

use super::value::Val;

/// cel-go's default limit on the depth of an expression's tree.
pub(crate) const MAX_DEPTH: usize = 250;
/// Our limit on the parser's own recursion (two levels per parenthesis, bracket, brace
/// or call): 48 nested groups, far beyond real rules, and within a debug build's
/// 2 MiB thread stack (cel-go allows deeper, on Go's growable stacks).
const MAX_NESTING: usize = 96;
/// cel-go's default limit on a source's size, in code points.
const MAX_SOURCE: usize = 100_000;

/// What a comprehension macro computes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Macro {
    All,
    Exists,
    ExistsOne,
    Map,
    Filter,
}

/// A parsed expression.
#[derive(Debug)]
pub(crate) enum Expr {
    Lit(Val),
    Ident(String),
    /// `e.f`, or `e.?f` (optional).
    Select(Box<Expr>, String, bool),
    /// `e[i]`, or `e[?i]` (optional).
    Index(Box<Expr>, Box<Expr>, bool),
    /// `f(args)` or `target.f(args)`.
    Call(Option<Box<Expr>>, String, Vec<Expr>),
    List(Vec<Expr>),
    Map(Vec<(Expr, Expr)>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Binary(&'static str, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `has(e.f)`.
    Has(Box<Expr>, String),
    /// `range.m(v, ...)` or `range.m(k, v, ...)`: a filter (map with three arguments) has
    /// `filter`, `map` has `body` as its transform, the others `body` as their predicate.
    Comp {
        kind: Macro,
        range: Box<Expr>,
        vars: (Option<String>, String),
        filter: Option<Box<Expr>>,
        body: Box<Expr>,
    },
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(String),
    Bytes(Vec<u8>),
    Ident(String),
    Op(&'static str),
    End,
}

const OPS: &[&str] = &[
    "==", "!=", "<=", ">=", "&&", "||", ".?", "<", ">", "+", "-", "*", "/", "%", "!", "?", ":",
    ".", ",", "(", ")", "[", "]", "{", "}",
];

const RESERVED: &[&str] = &[
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

fn lex(src: &str) -> Result<Vec<Tok>, String> {
    if src.chars().count() > MAX_SOURCE {
        return Err(format!(
            "expression code point size exceeds limit: size: {}, limit {MAX_SOURCE}",
            src.chars().count()
        ));
    }
    let b: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c == '/' && b.get(i + 1) == Some(&'/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && b.get(i + 1).is_some_and(char::is_ascii_digit)) {
            i = number(&b, i, &mut out)?;
            continue;
        }
        let prefix = |p: char| c.eq_ignore_ascii_case(&p);
        let quote_at = |j: usize| matches!(b.get(j), Some('"') | Some('\''));
        if (prefix('r') || prefix('b')) && quote_at(i + 1)
            || ((prefix('r') && b.get(i + 1).is_some_and(|c| c.eq_ignore_ascii_case(&'b')))
                || (prefix('b') && b.get(i + 1).is_some_and(|c| c.eq_ignore_ascii_case(&'r'))))
                && quote_at(i + 2)
        {
            let mut raw = false;
            let mut bytes = false;
            while !quote_at(i) {
                raw |= b[i].eq_ignore_ascii_case(&'r');
                bytes |= b[i].eq_ignore_ascii_case(&'b');
                i += 1;
            }
            let (s, next) = string(&b, i, raw, bytes)?;
            i = next;
            out.push(if bytes {
                Tok::Bytes(s)
            } else {
                Tok::Str(bytes_to_string(s)?)
            });
            continue;
        }
        if c == '"' || c == '\'' {
            let (s, next) = string(&b, i, false, false)?;
            i = next;
            out.push(Tok::Str(bytes_to_string(s)?));
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(b[start..i].iter().collect()));
            continue;
        }
        let two: String = b[i..(i + 2).min(b.len())].iter().collect();
        if let Some(op) = OPS.iter().find(|o| o.len() == 2 && two == **o) {
            out.push(Tok::Op(op));
            i += 2;
            continue;
        }
        if let Some(op) = OPS.iter().find(|o| o.len() == 1 && o.starts_with(c)) {
            out.push(Tok::Op(op));
            i += 1;
            continue;
        }
        return Err(format!("Syntax error: token recognition error at: '{c}'"));
    }
    out.push(Tok::End);
    Ok(out)
}

fn bytes_to_string(v: Vec<u8>) -> Result<String, String> {
    String::from_utf8(v).map_err(|_| "Syntax error: invalid UTF-8 in string literal".to_owned())
}

fn number(b: &[char], mut i: usize, out: &mut Vec<Tok>) -> Result<usize, String> {
    let start = i;
    if b[i] == '0' && matches!(b.get(i + 1), Some('x') | Some('X')) {
        i += 2;
        let ds = i;
        while i < b.len() && b[i].is_ascii_hexdigit() {
            i += 1;
        }
        let digits: String = b[ds..i].iter().collect();
        let unsigned = matches!(b.get(i), Some('u') | Some('U'));
        let v = u64::from_str_radix(&digits, 16)
            .map_err(|_| "Syntax error: invalid int literal".to_owned())?;
        if unsigned {
            out.push(Tok::Uint(v));
            return Ok(i + 1);
        }
        out.push(int_tok(v)?);
        return Ok(i);
    }
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut float = false;
    if b.get(i) == Some(&'.') && b.get(i + 1).is_some_and(char::is_ascii_digit) {
        float = true;
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if matches!(b.get(i), Some('e') | Some('E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some('+') | Some('-')) {
            j += 1;
        }
        if b.get(j).is_some_and(char::is_ascii_digit) {
            float = true;
            i = j;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    let text: String = b[start..i].iter().collect();
    if float {
        // Go's `ParseFloat` refuses a literal too large for a double (`ErrRange`), and
        // cel-go's parser with it (`invalid double literal`).
        let v: f64 = text
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| "Syntax error: invalid double literal".to_owned())?;
        out.push(Tok::Double(v));
        return Ok(i);
    }
    if matches!(b.get(i), Some('u') | Some('U')) {
        let v = text
            .parse()
            .map_err(|_| "Syntax error: invalid uint literal".to_owned())?;
        out.push(Tok::Uint(v));
        return Ok(i + 1);
    }
    // A literal one past i64::MAX is only valid negated; it is kept as u64 here and
    // resolved by the unary minus.
    let v: u64 = text
        .parse()
        .map_err(|_| "Syntax error: invalid int literal".to_owned())?;
    out.push(int_tok(v)?);
    Ok(i)
}

fn int_tok(v: u64) -> Result<Tok, String> {
    if v == 1u64 << 63 {
        // Only valid as `-9223372036854775808`; marked with a sentinel the parser resolves.
        return Ok(Tok::Double(f64::NAN));
    }
    i64::try_from(v)
        .map(Tok::Int)
        .map_err(|_| "Syntax error: invalid int literal".to_owned())
}

/// A quoted string from `b[i]` (the quote): its bytes and the index after it.
fn string(b: &[char], i: usize, raw: bool, bytes: bool) -> Result<(Vec<u8>, usize), String> {
    let q = b[i];
    let triple = b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q);
    let mut j = if triple { i + 3 } else { i + 1 };
    let mut out = Vec::new();
    let push_char = |out: &mut Vec<u8>, c: char| {
        let mut buf = [0; 4];
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    };
    loop {
        let Some(&c) = b.get(j) else {
            return Err("Syntax error: unterminated string literal".into());
        };
        if c == q && (!triple || (b.get(j + 1) == Some(&q) && b.get(j + 2) == Some(&q))) {
            return Ok((out, if triple { j + 3 } else { j + 1 }));
        }
        if !triple && (c == '\n' || c == '\r') {
            return Err("Syntax error: newline in string literal".into());
        }
        if c != '\\' || raw {
            push_char(&mut out, c);
            j += 1;
            continue;
        }
        let e = *b
            .get(j + 1)
            .ok_or("Syntax error: unterminated string literal")?;
        j += 2;
        match e {
            'a' => out.push(7),
            'b' => out.push(8),
            'f' => out.push(12),
            'n' => out.push(b'\n'),
            'r' => out.push(b'\r'),
            't' => out.push(b'\t'),
            'v' => out.push(11),
            '\\' | '\'' | '"' | '`' | '?' => out.push(e as u8),
            'x' | 'X' | 'u' | 'U' => {
                let n = match e {
                    'x' | 'X' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex: String = b
                    .get(j..j + n)
                    .ok_or("Syntax error: bad escape")?
                    .iter()
                    .collect();
                let v = u32::from_str_radix(&hex, 16).map_err(|_| "Syntax error: bad escape")?;
                j += n;
                if (e == 'x' || e == 'X') && bytes {
                    out.push(v as u8);
                } else {
                    let c =
                        char::from_u32(v).ok_or("Syntax error: invalid code point in escape")?;
                    push_char(&mut out, c);
                }
            }
            '0'..='3' => {
                let oct: String = b
                    .get(j - 1..j + 2)
                    .ok_or("Syntax error: bad escape")?
                    .iter()
                    .collect();
                let v = u32::from_str_radix(&oct, 8).map_err(|_| "Syntax error: bad escape")?;
                j += 2;
                if bytes {
                    out.push(v as u8);
                } else {
                    push_char(
                        &mut out,
                        char::from_u32(v).ok_or("Syntax error: bad escape")?,
                    );
                }
            }
            _ => return Err(format!("Syntax error: invalid escape sequence \\{e}")),
        }
    }
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    depth: usize,
}

/// Parses a CEL expression.
pub(crate) fn parse(src: &str) -> Result<Expr, String> {
    let mut p = Parser {
        toks: lex(src)?,
        pos: 0,
        depth: 0,
    };
    let e = p.expr()?;
    if p.peek() != &Tok::End {
        return Err(format!("Syntax error: unexpected {}", p.peek_text()));
    }
    if deeper_than(&e, MAX_DEPTH) {
        return Err(format!("max recursion depth exceeded ({MAX_DEPTH})"));
    }
    Ok(e)
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos]
    }

    fn peek_text(&self) -> String {
        match self.peek() {
            Tok::End => "end of input".into(),
            Tok::Op(o) => format!("'{o}'"),
            Tok::Ident(s) => format!("'{s}'"),
            _ => "literal".into(),
        }
    }

    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Tok::Op(o) if *o == op) {
            self.pos += 1;
            return true;
        }
        false
    }

    fn expect(&mut self, op: &str) -> Result<(), String> {
        if self.eat(op) {
            return Ok(());
        }
        Err(format!(
            "Syntax error: expected '{op}', found {}",
            self.peek_text()
        ))
    }

    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(format!("max recursion depth exceeded ({MAX_DEPTH})"));
        }
        Ok(())
    }

    /// One more link of a left-nested chain (`a + b + c`, `a.b.c`): each nests the tree one
    /// level deeper, so the `k`th link counts as `k` levels.
    fn link(&self, k: usize) -> Result<(), String> {
        if self.depth + k > MAX_DEPTH {
            return Err(format!("max recursion depth exceeded ({MAX_DEPTH})"));
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<Expr, String> {
        self.enter()?;
        let c = self.or()?;
        let e = if self.eat("?") {
            let t = self.or()?;
            self.expect(":")?;
            let f = self.expr()?;
            Expr::Cond(Box::new(c), Box::new(t), Box::new(f))
        } else {
            c
        };
        self.depth -= 1;
        Ok(e)
    }

    fn or(&mut self) -> Result<Expr, String> {
        let mut terms = vec![self.and()?];
        while self.eat("||") {
            terms.push(self.and()?);
        }
        Ok(balanced(terms, &|a, b| Expr::Or(Box::new(a), Box::new(b))))
    }

    fn and(&mut self) -> Result<Expr, String> {
        let mut terms = vec![self.relation()?];
        while self.eat("&&") {
            terms.push(self.relation()?);
        }
        Ok(balanced(terms, &|a, b| Expr::And(Box::new(a), Box::new(b))))
    }

    fn relation(&mut self) -> Result<Expr, String> {
        let mut l = self.addition()?;
        let mut k = 0;
        loop {
            k += 1;
            self.link(k)?;
            let op = match self.peek() {
                Tok::Op(o @ ("<" | "<=" | ">" | ">=" | "==" | "!=")) => *o,
                Tok::Ident(s) if s == "in" => "in",
                _ => return Ok(l),
            };
            self.pos += 1;
            let r = self.addition()?;
            l = Expr::Binary(op, Box::new(l), Box::new(r));
        }
    }

    fn addition(&mut self) -> Result<Expr, String> {
        let mut l = self.multiplication()?;
        let mut k = 0;
        loop {
            k += 1;
            self.link(k)?;
            let op = match self.peek() {
                Tok::Op(o @ ("+" | "-")) => *o,
                _ => return Ok(l),
            };
            self.pos += 1;
            let r = self.multiplication()?;
            l = Expr::Binary(op, Box::new(l), Box::new(r));
        }
    }

    fn multiplication(&mut self) -> Result<Expr, String> {
        let mut l = self.unary()?;
        let mut k = 0;
        loop {
            k += 1;
            self.link(k)?;
            let op = match self.peek() {
                Tok::Op(o @ ("*" | "/" | "%")) => *o,
                _ => return Ok(l),
            };
            self.pos += 1;
            let r = self.unary()?;
            l = Expr::Binary(op, Box::new(l), Box::new(r));
        }
    }

    /// `!`s and `-`s before a member, applied innermost first (a loop, not recursion: a
    /// long run of them is a deep tree, refused by the depth check, not a deep stack).
    fn unary(&mut self) -> Result<Expr, String> {
        let mut ops = Vec::new();
        while let Tok::Op(o @ ("!" | "-")) = self.peek() {
            ops.push(*o);
            self.pos += 1;
        }
        let mut e = if ops.last() == Some(&"-") {
            // A negative literal is one constant (`-9223372036854775808` is valid).
            let lit = match self.peek().clone() {
                Tok::Int(v) => Some(Val::Int(-v)),
                Tok::Double(v) if v.is_nan() => Some(Val::Int(i64::MIN)),
                Tok::Double(v) => Some(Val::Double(-v)),
                _ => None,
            };
            match lit {
                Some(v) => {
                    self.pos += 1;
                    ops.pop();
                    self.member_tail(Expr::Lit(v))?
                }
                None => self.member()?,
            }
        } else {
            self.member()?
        };
        for op in ops.into_iter().rev() {
            e = if op == "!" {
                Expr::Not(Box::new(e))
            } else {
                Expr::Neg(Box::new(e))
            };
        }
        Ok(e)
    }

    fn member(&mut self) -> Result<Expr, String> {
        let p = self.primary()?;
        self.member_tail(p)
    }

    fn member_tail(&mut self, mut e: Expr) -> Result<Expr, String> {
        let mut k = 0;
        loop {
            k += 1;
            self.link(k)?;
            if self.eat(".") || {
                let opt = matches!(self.peek(), Tok::Op(".?"));
                if opt {
                    self.pos += 1;
                    let name = self.ident()?;
                    e = Expr::Select(Box::new(e), name, true);
                    continue;
                }
                false
            } {
                let name = self.ident()?;
                if self.eat("(") {
                    let args = self.args(")")?;
                    e = expand_method(e, name, args)?;
                } else {
                    e = Expr::Select(Box::new(e), name, false);
                }
            } else if self.eat("[") {
                let opt = self.eat("?");
                let i = self.expr()?;
                self.expect("]")?;
                e = Expr::Index(Box::new(e), Box::new(i), opt);
            } else {
                return Ok(e);
            }
        }
    }

    fn ident(&mut self) -> Result<String, String> {
        match self.peek().clone() {
            Tok::Ident(s) => {
                self.pos += 1;
                Ok(s)
            }
            _ => Err(format!(
                "Syntax error: expected an identifier, found {}",
                self.peek_text()
            )),
        }
    }

    fn args(&mut self, close: &str) -> Result<Vec<Expr>, String> {
        let mut out = Vec::new();
        if self.eat(close) {
            return Ok(out);
        }
        loop {
            out.push(self.expr()?);
            if self.eat(close) {
                return Ok(out);
            }
            self.expect(",")?;
            if self.eat(close) {
                return Ok(out);
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, String> {
        self.enter()?;
        let tok = self.peek().clone();
        self.pos += 1;
        let e = match tok {
            Tok::Int(v) => Expr::Lit(Val::Int(v)),
            Tok::Double(v) if v.is_nan() => return Err("Syntax error: invalid int literal".into()),
            Tok::Double(v) => Expr::Lit(Val::Double(v)),
            Tok::Uint(v) => Expr::Lit(Val::Uint(v)),
            Tok::Str(s) => Expr::Lit(Val::str(s)),
            Tok::Bytes(b) => Expr::Lit(Val::Bytes(Rc::from(b))),
            Tok::Op("(") => {
                let e = self.expr()?;
                self.expect(")")?;
                e
            }
            Tok::Op("[") => Expr::List(self.args("]")?),
            Tok::Op("{") => {
                let mut entries = Vec::new();
                if !self.eat("}") {
                    loop {
                        let k = self.expr()?;
                        self.expect(":")?;
                        let v = self.expr()?;
                        entries.push((k, v));
                        if self.eat("}") {
                            break;
                        }
                        self.expect(",")?;
                        if self.eat("}") {
                            break;
                        }
                    }
                }
                Expr::Map(entries)
            }
            Tok::Op(".") => {
                let name = self.ident()?;
                self.ident_or_call(name)?
            }
            Tok::Ident(name) => match name.as_str() {
                "true" => Expr::Lit(Val::Bool(true)),
                "false" => Expr::Lit(Val::Bool(false)),
                "null" => Expr::Lit(Val::Null),
                n if RESERVED.contains(&n) || n == "in" => {
                    return Err(format!("Syntax error: reserved identifier: {n}"))
                }
                _ => self.ident_or_call(name)?,
            },
            _ => {
                self.pos -= 1;
                return Err(format!("Syntax error: unexpected {}", self.peek_text()));
            }
        };
        self.depth -= 1;
        Ok(e)
    }

    fn ident_or_call(&mut self, name: String) -> Result<Expr, String> {
        if !self.eat("(") {
            return Ok(Expr::Ident(name));
        }
        let mut args = self.args(")")?;
        if name == "has" {
            return match (args.len(), args.first_mut()) {
                (1, Some(Expr::Select(target, field, false))) => {
                    let t = std::mem::replace(&mut **target, Expr::Lit(Val::Null));
                    Ok(Expr::Has(Box::new(t), field.clone()))
                }
                _ => Err("invalid argument to has() macro".into()),
            };
        }
        Ok(Expr::Call(None, name, args))
    }
}

/// `a && b && c && d` as `(a && b) && (c && d)`, as cel-go's parser balances them: the
/// same value (both operators are associative, errors included) at a logarithmic depth.
fn balanced(mut terms: Vec<Expr>, join: &dyn Fn(Expr, Expr) -> Expr) -> Expr {
    if terms.len() == 1 {
        return terms.pop().unwrap_or(Expr::Lit(Val::Null));
    }
    let right = terms.split_off(terms.len() / 2);
    join(balanced(terms, join), balanced(right, join))
}

/// The depth of `e`'s tree, found without recursion (a hostile tree may be deeper than the
/// stack allows), stopping past `limit`.
fn deeper_than(e: &Expr, limit: usize) -> bool {
    let mut stack = vec![(e, 1usize)];
    while let Some((e, d)) = stack.pop() {
        if d > limit {
            return true;
        }
        for_each_child(e, &mut |c| stack.push((c, d + 1)));
    }
    false
}

fn for_each_child<'e>(e: &'e Expr, f: &mut dyn FnMut(&'e Expr)) {
    match e {
        Expr::Lit(_) | Expr::Ident(_) => {}
        Expr::Select(t, _, _) | Expr::Has(t, _) | Expr::Not(t) | Expr::Neg(t) => f(t),
        Expr::Index(a, b, _) | Expr::Binary(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) => {
            f(a);
            f(b);
        }
        Expr::Call(t, _, args) => {
            if let Some(t) = t {
                f(t);
            }
            args.iter().for_each(f);
        }
        Expr::List(l) => l.iter().for_each(f),
        Expr::Map(es) => es.iter().for_each(|(k, v)| {
            f(k);
            f(v);
        }),
        Expr::Cond(a, b, c) => {
            f(a);
            f(b);
            f(c);
        }
        Expr::Comp {
            range,
            filter,
            body,
            ..
        } => {
            f(range);
            if let Some(x) = filter {
                f(x);
            }
            f(body);
        }
    }
}

impl Drop for Expr {
    /// Without recursion: a tree refused for its depth must still be dropped.
    fn drop(&mut self) {
        let mut stack: Vec<Expr> = Vec::new();
        take_children(self, &mut stack);
        while let Some(mut e) = stack.pop() {
            take_children(&mut e, &mut stack);
        }
    }
}

fn take_children(e: &mut Expr, out: &mut Vec<Expr>) {
    let mut take = |b: &mut Box<Expr>| out.push(std::mem::replace(&mut **b, Expr::Lit(Val::Null)));
    match e {
        Expr::Lit(_) | Expr::Ident(_) => {}
        Expr::Select(t, _, _) | Expr::Has(t, _) | Expr::Not(t) | Expr::Neg(t) => take(t),
        Expr::Index(a, b, _) | Expr::Binary(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) => {
            take(a);
            take(b);
        }
        Expr::Call(t, _, args) => {
            if let Some(t) = t {
                take(t);
            }
            out.append(args);
        }
        Expr::List(l) => out.append(l),
        Expr::Map(es) => {
            for (k, v) in es.drain(..) {
                out.push(k);
                out.push(v);
            }
        }
        Expr::Cond(a, b, c) => {
            take(a);
            take(b);
            take(c);
        }
        Expr::Comp {
            range,
            filter,
            body,
            ..
        } => {
            take(range);
            if let Some(x) = filter {
                take(x);
            }
            take(body);
        }
    }
}

fn var_name(e: Expr) -> Result<String, String> {
    match &e {
        Expr::Ident(n) => Ok(n.clone()),
        _ => Err("argument must be a simple name".into()),
    }
}

/// `target.name(args)`: a macro's expansion, or a method call.
fn expand_method(target: Expr, name: String, args: Vec<Expr>) -> Result<Expr, String> {
    let kind = match name.as_str() {
        "all" => Macro::All,
        "exists" => Macro::Exists,
        "exists_one" | "existsOne" => Macro::ExistsOne,
        "map" => Macro::Map,
        "filter" => Macro::Filter,
        _ => return Ok(Expr::Call(Some(Box::new(target)), name, args)),
    };
    let n = args.len();
    let mut it = args.into_iter();
    let range = Box::new(target);
    match (kind, n) {
        (Macro::Map, 3) => {
            let v = var_name(it.next().unwrap_or(Expr::Lit(Val::Null)))?;
            let f = it.next().map(Box::new);
            let body = Box::new(it.next().unwrap_or(Expr::Lit(Val::Null)));
            Ok(Expr::Comp {
                kind,
                range,
                vars: (None, v),
                filter: f,
                body,
            })
        }
        (_, 2) => {
            let v = var_name(it.next().unwrap_or(Expr::Lit(Val::Null)))?;
            let body = Box::new(it.next().unwrap_or(Expr::Lit(Val::Null)));
            Ok(Expr::Comp {
                kind,
                range,
                vars: (None, v),
                filter: None,
                body,
            })
        }
        (Macro::All | Macro::Exists | Macro::ExistsOne, 3) => {
            let k = var_name(it.next().unwrap_or(Expr::Lit(Val::Null)))?;
            let v = var_name(it.next().unwrap_or(Expr::Lit(Val::Null)))?;
            let body = Box::new(it.next().unwrap_or(Expr::Lit(Val::Null)));
            Ok(Expr::Comp {
                kind,
                range,
                vars: (Some(k), v),
                filter: None,
                body,
            })
        }
        _ => Err(format!(
            "no matching overload for macro '{name}' with {n} arguments"
        )),
    }
}
