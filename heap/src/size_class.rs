//! Small size classes: 16-byte steps up to 128, then four classes per
//! doubling up to [`SMALL_MAX`](crate::SMALL_MAX) (at most 25% internal waste).

/// Number of small classes.
pub(crate) const CLASSES: usize = 32;

/// The byte size of class `c`.
#[inline]
pub(crate) const fn class_size(c: usize) -> usize {
    if c < 8 {
        (c + 1) * 16
    } else {
        let j = c - 8;
        let b = 7 + j / 4;
        (4 + j % 4 + 1) << (b - 2)
    }
}

/// The smallest class that holds `size` bytes (`size <= SMALL_MAX`; 0 counts as 1).
#[inline]
pub(crate) const fn class_of(size: usize) -> usize {
    if size <= 128 {
        if size == 0 { 0 } else { size.div_ceil(16) - 1 }
    } else {
        let s = size - 1;
        let b = (usize::BITS - 1 - s.leading_zeros()) as usize;
        8 + (b - 7) * 4 + ((s >> (b - 2)) & 3)
    }
}

/// The smallest class that holds `size` bytes at alignment `align`, if any.
/// Slabs start at a 64 KiB boundary and objects sit at multiples of the class
/// size, so a class whose size is a multiple of `align` gives aligned objects.
#[inline]
pub(crate) fn class_for(size: usize, align: usize) -> Option<usize> {
    if size > crate::SMALL_MAX || align > crate::SMALL_MAX {
        return None;
    }
    let mut c = class_of(size.max(align));
    if align <= 16 {
        return Some(c);
    }
    while c < CLASSES {
        if class_size(c) % align == 0 {
            return Some(c);
        }
        c += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_increasing_and_cover_every_size() {
        for c in 1..CLASSES {
            assert!(class_size(c) > class_size(c - 1));
            assert_eq!(class_size(c) % 16, 0);
        }
        assert_eq!(class_size(CLASSES - 1), crate::SMALL_MAX);
        for s in 0..=crate::SMALL_MAX {
            let c = class_of(s);
            assert!(class_size(c) >= s.max(1), "size {s}");
            assert!(
                c == 0 || class_size(c - 1) < s,
                "size {s} not in smallest class"
            );
        }
    }

    #[test]
    fn aligned_classes_are_aligned() {
        let mut a = 1;
        while a <= crate::SMALL_MAX {
            for s in [0, 1, 17, 100, 1000, 5000] {
                if let Some(c) = class_for(s, a) {
                    assert!(class_size(c) >= s && class_size(c) % a.max(16) == 0);
                }
            }
            a *= 2;
        }
    }
}
