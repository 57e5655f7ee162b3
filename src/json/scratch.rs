//! `Scratch`: a short temporary list kept on the stack.
//!
//! Why: decoding one object gathers a few short lists before it can build the result (a
//! label map's entries, to sort and pack into one buffer; an object's raw members, to copy
//! into one shared buffer). Each was a `Vec` allocated and freed per object, on the hot path
//! of every list page and watch event. Up to `N` items live inline here; a longer list moves
//! to the heap once, so any length still works.

/// Up to `N` items inline, more on the heap.
pub(crate) struct Scratch<T, const N: usize> {
    inline: [T; N],
    len: usize,
    /// Every item, once there were more than `N` (then `inline` is unused).
    spilled: Vec<T>,
}

impl<T: Default, const N: usize> Scratch<T, N> {
    pub(crate) fn new() -> Self {
        Scratch {
            inline: std::array::from_fn(|_| T::default()),
            len: 0,
            spilled: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, item: T) {
        if self.spilled.is_empty() {
            if let Some(slot) = self.inline.get_mut(self.len) {
                *slot = item;
                self.len += 1;
                return;
            }
            self.spilled.reserve(2 * N.max(1));
            let held = self.len;
            self.spilled
                .extend(self.inline[..held].iter_mut().map(std::mem::take));
        }
        self.spilled.push(item);
    }

    /// The items, in the order pushed.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        if self.spilled.is_empty() {
            &mut self.inline[..self.len]
        } else {
            &mut self.spilled
        }
    }

    /// The items, in the order pushed.
    pub(crate) fn as_slice(&self) -> &[T] {
        if self.spilled.is_empty() {
            &self.inline[..self.len]
        } else {
            &self.spilled
        }
    }

    /// Takes the items out, in the order pushed.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        let len = std::mem::take(&mut self.len);
        let spilled = std::mem::take(&mut self.spilled);
        let inline = if spilled.is_empty() { len } else { 0 };
        self.inline[..inline]
            .iter_mut()
            .map(std::mem::take)
            .chain(spilled)
    }

    pub(crate) fn len(&self) -> usize {
        self.as_slice().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_inline_and_past_the_inline_room() {
        for n in [0, 1, 3, 4, 5, 9, 40] {
            let mut s: Scratch<String, 4> = Scratch::new();
            for i in 0..n {
                s.push(i.to_string());
            }
            let expected: Vec<String> = (0..n).map(|i| i.to_string()).collect();
            assert_eq!(s.len(), n);
            assert_eq!(s.as_slice(), expected.as_slice());
            assert_eq!(s.as_mut_slice(), expected.as_slice());
            assert_eq!(s.drain().collect::<Vec<_>>(), expected);
            assert_eq!(s.len(), 0, "drained");
            s.push("again".into());
            assert_eq!(s.as_slice(), ["again"]);
        }
    }
}
