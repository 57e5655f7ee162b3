//! Where the encoder's bytes wait until a message is complete: Go's field order without
//! copying a nested message into its parent.
//!
//! Why: a serde value hands over its members in its own order (k8s-openapi's is
//! alphabetical, a `DynamicObject`'s is the server's), but Go writes fields by number, and a
//! length-delimited message needs its length before its bytes. Writing each nested message
//! into its own buffer and copying it into its parent copies every byte once per level and
//! allocates once per message. Instead, every scalar field is written once, tag and all,
//! into one arena, and a message is a list of *pieces*: a range of the arena, or a closed
//! child message. A message is closed when its value ends: its pieces are sorted into field
//! order (stable: a list keeps its order), a member given twice keeps its last value (as a
//! JSON object does), Go's zero value is added for every absent non-pointer field, and its
//! size is summed from its pieces. The size of every message is therefore known before
//! anything is written, and the final pass writes each byte exactly once, into an output of
//! exactly the right length. Memory is the arena (about the output's size) plus 32 bytes a
//! piece; no allocation per message.
//!
//! Sort keys: a member's *route* from the message that holds it, one 16-bit field number a
//! level, the first level in the top bits: a member of an inlined message (Go's
//! `json:",inline"`, whose members sit in their parent's JSON object) sorts inside its
//! inline field's number and is gathered into that message when its parent closes.

use super::descriptor::{
    Field, Kind, MessageDesc, INLINE, MAP, MESSAGES, NOJSON, POINTER, REPEATED,
};
use super::wire::{put_tag, put_varint, varint_len, LEN};
use super::zero::zero_content;
use super::{de::MAX_DEPTH, ProtobufError};

/// Bits a route level takes in a sort key, and how many levels a key holds.
pub(super) const LEVEL_BITS: u32 = 16;
pub(super) const LEVELS: u32 = 4;

/// The sort key of field `number` at route level `level`.
pub(super) fn route_key(level: u32, number: u32) -> u64 {
    u64::from(number) << (LEVEL_BITS * (LEVELS - 1 - level))
}

fn level_of(key: u64, level: u32) -> u32 {
    ((key >> (LEVEL_BITS * (LEVELS - 1 - level))) & 0xffff) as u32
}

#[derive(Clone, Copy, Debug)]
pub(super) enum What {
    /// Finished wire bytes (one or more whole fields), or nothing (a member given as `null`
    /// or an empty list: it still counts as given, for "the last one wins").
    Bytes { start: usize, end: usize },
    /// A closed message written as field `number` (number 0: the top, written bare).
    Message { number: u32, node: usize },
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Piece {
    /// Route of the member this piece belongs to, within the open message.
    pub key: u64,
    /// Which occurrence of a member wrote it (members given twice: the last one wins).
    pub member: u32,
    pub what: What,
}

#[derive(Clone, Copy, Debug)]
struct Node {
    start: usize,
    end: usize,
    size: usize,
}

#[derive(Default)]
pub(super) struct Rope {
    pub arena: Vec<u8>,
    /// Pieces of the messages still open, innermost last.
    pub pending: Vec<Piece>,
    /// Pieces of closed messages, each message's contiguous and in field order.
    done: Vec<Piece>,
    nodes: Vec<Node>,
}

impl Rope {
    pub(super) fn with_capacity(bytes: usize) -> Self {
        Rope {
            arena: Vec::with_capacity(bytes),
            pending: Vec::with_capacity(128),
            done: Vec::with_capacity(128),
            nodes: Vec::with_capacity(32),
        }
    }

    /// Appends wire bytes written by `write` as a piece of the open message.
    pub(super) fn leaf(&mut self, key: u64, member: u32, write: impl FnOnce(&mut Vec<u8>)) {
        let start = self.arena.len();
        write(&mut self.arena);
        let end = self.arena.len();
        self.pending.push(Piece {
            key,
            member,
            what: What::Bytes { start, end },
        });
    }

    /// As [`Rope::leaf`], for a writer that may fail.
    pub(super) fn leaf_try<E>(
        &mut self,
        key: u64,
        member: u32,
        write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<(), E> {
        let start = self.arena.len();
        write(&mut self.arena)?;
        let end = self.arena.len();
        self.pending.push(Piece {
            key,
            member,
            what: What::Bytes { start, end },
        });
        Ok(())
    }

    /// A member that writes nothing but counts as given.
    pub(super) fn marker(&mut self, key: u64, member: u32) {
        let at = self.arena.len();
        self.pending.push(Piece {
            key,
            member,
            what: What::Bytes { start: at, end: at },
        });
    }

    fn size_of(&self, piece: &Piece) -> usize {
        match piece.what {
            What::Bytes { start, end } => end - start,
            What::Message { number, node } => {
                let size = self.nodes[node].size;
                if number == 0 {
                    size
                } else {
                    varint_len(u64::from(number) << 3) + varint_len(size as u64) + size
                }
            }
        }
    }

    fn node_from(&mut self, start: usize) -> usize {
        let end = self.done.len();
        let size = self.done[start..end].iter().map(|p| self.size_of(p)).sum();
        self.nodes.push(Node { start, end, size });
        self.nodes.len() - 1
    }

    fn attach(&mut self, node: usize, number: u32, key: u64, member: u32) {
        self.pending.push(Piece {
            key,
            member,
            what: What::Message { number, node },
        });
    }

    /// Closes a message whose pieces (from `mark`) were written in order: a wrapper such
    /// as a map entry or a `JSONSchemaPropsOrBool`.
    pub(super) fn close_in_order(&mut self, mark: usize, number: u32, key: u64, member: u32) {
        let mark = mark.min(self.pending.len());
        let start = self.done.len();
        self.done.extend(self.pending.drain(mark..));
        let node = self.node_from(start);
        self.attach(node, number, key, member);
    }

    /// Closes message `desc` whose members' pieces start at `mark` (see the module docs);
    /// `depth`: the message's own nesting depth.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn close_message(
        &mut self,
        mark: usize,
        desc: &'static MessageDesc,
        depth: usize,
        number: u32,
        key: u64,
        member: u32,
    ) -> Result<(), ProtobufError> {
        let mark = mark.min(self.pending.len());
        let pieces = &mut self.pending[mark..];
        if !pieces.is_sorted_by_key(|p| p.key) {
            pieces.sort_by_key(|p| p.key);
        }
        // A member given twice: the last occurrence's pieces only.
        let mut kept = mark;
        let mut i = mark;
        while i < self.pending.len() {
            let key = self.pending[i].key;
            let mut j = i;
            while j < self.pending.len() && self.pending[j].key == key {
                j += 1;
            }
            let last = self.pending[j - 1].member;
            for k in i..j {
                if self.pending[k].member == last {
                    self.pending[kept] = self.pending[k];
                    kept += 1;
                }
            }
            i = j;
        }
        self.pending.truncate(kept);
        let node = self.assemble(desc, mark, self.pending.len(), 0, depth)?;
        self.pending.truncate(mark);
        self.attach(node, number, key, member);
        Ok(())
    }

    /// Builds the node of `desc` from the sorted pending pieces `from..to`, whose route at
    /// `level` is a field of `desc`.
    fn assemble(
        &mut self,
        desc: &'static MessageDesc,
        from: usize,
        to: usize,
        level: u32,
        depth: usize,
    ) -> Result<usize, ProtobufError> {
        // First the inlined messages (their nodes must precede this one's pieces in `done`).
        let mut inline_nodes = [usize::MAX; 8];
        let mut inlines = 0;
        let mut i = from;
        let has_inline = desc.fields.iter().any(|f| f.has(INLINE));
        for field in desc.fields.iter().filter(|_| has_inline) {
            let (run, next) = self.run(i, to, level, field.0);
            i = next;
            if field.has(NOJSON) || !field.has(INLINE) {
                continue;
            }
            let Kind::M(index) = field.2 else { continue };
            if depth + 1 >= MAX_DEPTH || level + 1 >= LEVELS || inlines == inline_nodes.len() {
                return Err(ProtobufError::new("messages nested too deeply"));
            }
            inline_nodes[inlines] = self.assemble(
                &MESSAGES[index as usize],
                run.0,
                run.1,
                level + 1,
                depth + 1,
            )?;
            inlines += 1;
        }
        let start = self.done.len();
        let mut i = from;
        let mut inlines = 0;
        for field in desc.fields {
            let (run, next) = self.run(i, to, level, field.0);
            i = next;
            if field.has(NOJSON) {
                continue;
            }
            if field.has(INLINE) {
                if matches!(field.2, Kind::M(_)) {
                    let node = inline_nodes[inlines];
                    inlines += 1;
                    self.push_done(
                        start,
                        What::Message {
                            number: field.0,
                            node,
                        },
                    );
                }
                continue;
            }
            if run.0 < run.1 {
                for k in run.0..run.1 {
                    let piece = self.pending[k];
                    self.push_done(start, piece.what);
                }
            } else {
                let at = self.arena.len();
                zero_field(&mut self.arena, field, depth + 1)
                    .map_err(|e| e.in_field(field.1).in_field(desc.name))?;
                let end = self.arena.len();
                if end > at {
                    self.push_done(start, What::Bytes { start: at, end });
                }
            }
        }
        Ok(self.node_from(start))
    }

    /// Appends a piece to the node begun at `node_start` in `done`, joined to the previous
    /// one when both are bytes that follow each other in the arena (fewer pieces to walk).
    fn push_done(&mut self, node_start: usize, what: What) {
        if let What::Bytes { start, end } = what {
            if start == end {
                return;
            }
            if self.done.len() > node_start {
                if let Some(Piece {
                    what: What::Bytes { end: last_end, .. },
                    ..
                }) = self.done.last_mut()
                {
                    if *last_end == start {
                        *last_end = end;
                        return;
                    }
                }
            }
        }
        self.done.push(Piece {
            key: 0,
            member: 0,
            what,
        });
    }

    /// The pieces from `i` whose route at `level` is `number` (skipping any that sort
    /// before it, which only a broken value could leave), and where the next run starts.
    fn run(&self, mut i: usize, to: usize, level: u32, number: u32) -> ((usize, usize), usize) {
        while i < to && level_of(self.pending[i].key, level) < number {
            i += 1;
        }
        let start = i;
        while i < to && level_of(self.pending[i].key, level) == number {
            i += 1;
        }
        ((start, i), i)
    }

    /// Sorts the map entries from `mark` by key (Go's order), the last of equal keys kept.
    pub(super) fn sort_entries(&mut self, mark: usize) {
        let mark = mark.min(self.pending.len());
        let mut entries = std::mem::take(&mut self.pending);
        entries[mark..].sort_by(|a, b| self.entry_key(a).cmp(self.entry_key(b)));
        let mut kept = mark;
        for i in mark..entries.len() {
            let last_of_equal = i + 1 == entries.len()
                || self.entry_key(&entries[i]) != self.entry_key(&entries[i + 1]);
            if last_of_equal {
                entries[kept] = entries[i];
                kept += 1;
            }
        }
        entries.truncate(kept);
        self.pending = entries;
    }

    /// A map entry's key: the string in its first piece (field 1, written by the encoder).
    fn entry_key(&self, piece: &Piece) -> &[u8] {
        let What::Message { node, .. } = piece.what else {
            return &[];
        };
        let node = self.nodes[node];
        let Some(What::Bytes { start, end }) =
            self.done[node.start..node.end].first().map(|p| p.what)
        else {
            return &[];
        };
        let bytes = &self.arena[start..end];
        // One tag byte (field 1), then the length's varint, then the key.
        let mut at = 1;
        while at < bytes.len() && bytes[at] & 0x80 != 0 {
            at += 1;
        }
        bytes.get(at + 1..).unwrap_or(&[])
    }

    /// The finished message: the single piece left, written bare.
    pub(super) fn finish(self) -> Result<Vec<u8>, ProtobufError> {
        let [root] = self.pending[..] else {
            return Err(ProtobufError::new("the value was not written whole"));
        };
        let mut out = Vec::with_capacity(self.size_of(&root));
        self.write(&root, &mut out);
        Ok(out)
    }

    fn write(&self, piece: &Piece, out: &mut Vec<u8>) {
        match piece.what {
            What::Bytes { start, end } => out.extend_from_slice(&self.arena[start..end]),
            What::Message { number, node } => {
                let node = self.nodes[node];
                if number != 0 {
                    put_tag(out, number, LEN);
                    put_varint(out, node.size as u64);
                }
                for child in &self.done[node.start..node.end] {
                    self.write(child, out);
                }
            }
        }
    }
}

/// Go's bytes for field `field` left out of the JSON (`null`): nothing for a pointer, a
/// list, a map or bytes; the zero value otherwise. `depth`: a message value's depth.
pub(super) fn zero_field(
    out: &mut Vec<u8>,
    field: &'static Field,
    depth: usize,
) -> Result<(), ProtobufError> {
    if field.has(MAP) || field.has(REPEATED) || field.has(POINTER) || field.2 == Kind::B {
        return Ok(());
    }
    zero_value(out, field.0, field.2, depth)
}

/// Go's zero value of `kind` written as field `number` (0: a bare message).
pub(super) fn zero_value(
    out: &mut Vec<u8>,
    number: u32,
    kind: Kind,
    depth: usize,
) -> Result<(), ProtobufError> {
    match kind {
        Kind::S | Kind::B => {
            put_tag(out, number, LEN);
            out.push(0);
        }
        Kind::I32 | Kind::I64 | Kind::Bool => {
            put_tag(out, number, super::wire::VARINT);
            out.push(0);
        }
        Kind::F64 => {
            put_tag(out, number, super::wire::FIXED64);
            out.extend_from_slice(&[0; 8]);
        }
        Kind::M(index) => {
            let (bytes, height) = zero_content(index);
            if depth.saturating_add(height) >= MAX_DEPTH {
                return Err(ProtobufError::new("messages nested too deeply"));
            }
            if number != 0 {
                put_tag(out, number, LEN);
                put_varint(out, bytes.len() as u64);
            }
            out.extend_from_slice(bytes);
        }
    }
    Ok(())
}
