//! A CEL (Common Expression Language) interpreter for the rules of custom resources
//! (`x-kubernetes-validations`), written for the test server.
//!
//! Why our own: the crates.io interpreters were not in this build's offline registry, and
//! the ones published pull a parser generator runtime (antlr4rust or lalrpop) plus
//! `chrono`, `nom` and more into every `testing` build; the subset CRD rules use is a
//! couple of thousand lines with no dependency beyond the `regex` crate `testing` already
//! has. Owning it also lets the semantics follow cel-go where the crates differ: checked
//! `int`/`uint` arithmetic (`integer overflow`), heterogeneous numeric equality
//! (`1 == 1.0`), `||`/`&&` absorbing errors, code-point string indexes, RE2 regexes, and a
//! cost budget.
//!
//! What it does not do: static type checking (kube-apiserver type-checks rules when the
//! CRD is written; here a mistyped rule fails when it runs, with `no such overload`), and
//! the libraries listed in `library.rs` as not implemented. Parsing is bounded (source
//! size, nesting depth: see `parse.rs`) and evaluation is bounded by a cost budget, so a
//! hostile rule or object can neither panic, hang nor overflow the stack.

mod eval;
mod library;
mod ops;
mod parse;
mod quantity;
mod time;
mod value;

pub(crate) use eval::COST_EXCEEDED;
pub(crate) use value::{from_json, Val};

use parse::Expr;

/// kube-apiserver's per-expression cost limit (`PerCallLimit`).
pub(crate) const PER_CALL_LIMIT: u64 = 1_000_000;

/// Identifiers that Kubernetes escapes as `__{keyword}__` in property names.
pub(crate) fn parse_keywords() -> &'static [&'static str] {
    &[
        "true",
        "false",
        "null",
        "in",
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
    ]
}

/// A parsed rule.
#[derive(Debug)]
pub(crate) struct Program {
    expr: Expr,
    /// Whether the rule reads `oldSelf` (a transition rule).
    pub(crate) uses_old_self: bool,
}

/// Parses `src`; the error is a syntax error's text.
pub(crate) fn compile(src: &str) -> Result<Program, String> {
    let expr = parse::parse(src)?;
    let uses_old_self = mentions(&expr, "oldSelf");
    Ok(Program {
        expr,
        uses_old_self,
    })
}

fn mentions(e: &Expr, name: &str) -> bool {
    let m = |x: &Expr| mentions(x, name);
    match e {
        Expr::Lit(_) => false,
        Expr::Ident(n) => n == name,
        Expr::Select(t, _, _) | Expr::Has(t, _) | Expr::Not(t) | Expr::Neg(t) => m(t),
        Expr::Index(a, b, _) | Expr::Binary(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) => {
            m(a) || m(b)
        }
        Expr::Call(t, _, args) => t.as_deref().is_some_and(m) || args.iter().any(m),
        Expr::List(l) => l.iter().any(m),
        Expr::Map(es) => es.iter().any(|(k, v)| m(k) || m(v)),
        Expr::Cond(a, b, c) => m(a) || m(b) || m(c),
        Expr::Comp {
            range,
            filter,
            body,
            ..
        } => m(range) || filter.as_deref().is_some_and(m) || m(body),
    }
}

/// The outcome of one evaluation: the value or the error text, and the cost spent.
pub(crate) struct Outcome {
    pub(crate) result: Result<Val, String>,
    pub(crate) cost: u64,
}

impl Program {
    /// Evaluates with the variables `vars`, spending at most `limit`.
    pub(crate) fn eval(&self, vars: Vec<(String, Val)>, limit: u64) -> Outcome {
        let mut env = eval::Env::new(vars, limit);
        let result = eval::eval(&self.expr, &mut env).map_err(|e| e.0);
        Outcome {
            result,
            cost: env.cost,
        }
    }
}

#[cfg(test)]
mod tests;
