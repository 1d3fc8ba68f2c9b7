//! Small size classes: 16-byte steps up to 128, then four classes per
//! doubling up to [`SMALL_MAX`](crate::layout::SMALL_MAX) (at most 25% internal waste).
//! Above 4 KiB the classes sit half a step higher (4608, 5632, 6656, then
//! 8192): a page and a header, as page caches allocate (sqlite3's 4368-byte
//! pages), costs 12.5% there, not 25% (14 objects a 64 KiB slab, not 12).

/// Number of small classes.
pub(crate) const CLASSES: usize = 32;

/// The byte size of class `c`, computed (the tables below are built from it).
const fn compute_size(c: usize) -> usize {
    if c < 8 {
        (c + 1) * 16
    } else if c >= CLASSES - 4 && c < CLASSES - 1 {
        // 4608, 5632, 6656 (see the module's note).
        4608 + (c - (CLASSES - 4)) * 1024
    } else {
        let j = c - 8;
        let b = 7 + j / 4;
        (4 + j % 4 + 1) << (b - 2)
    }
}

/// The smallest class holding `size` bytes, computed.
const fn compute_class(size: usize) -> usize {
    if size <= 128 {
        if size == 0 { 0 } else { size.div_ceil(16) - 1 }
    } else if size > 4096 {
        if size <= 6656 {
            CLASSES - 4 + size.saturating_sub(4608).div_ceil(1024)
        } else {
            CLASSES - 1
        }
    } else {
        let s = size - 1;
        let b = (usize::BITS - 1 - s.leading_zeros()) as usize;
        8 + (b - 7) * 4 + ((s >> (b - 2)) & 3)
    }
}

/// Class sizes by class: one load on the fast paths instead of arithmetic
/// and a branch.
static SIZES: [u32; CLASSES] = {
    let mut t = [0u32; CLASSES];
    let mut c = 0;
    while c < CLASSES {
        t[c] = compute_size(c) as u32;
        c += 1;
    }
    t
};

/// `2^32 / size + 1` for a class of `size` bytes (at most
/// [`SMALL_MAX`](crate::layout::SMALL_MAX)): an offset `off` below 2^16 is
/// a multiple of `size` exactly when `off * magic < magic` (wrapping u32
/// arithmetic), and the `k`-th multiple's product is `k * excess`, where
/// `excess = magic * size - 2^32` (at least 1, at most `size`). So one
/// compare of `off * magic` against `k * excess` asks both whether `off`
/// starts an object and whether it is one of the first `k`.
pub(crate) const fn compute_magic(size: usize) -> u32 {
    ((1u64 << 32) / size as u64 + 1) as u32
}

/// `magic * size - 2^32` for the class of `size` bytes (see [`compute_magic`]).
const fn compute_excess(size: usize) -> u32 {
    (compute_magic(size) as u64 * size as u64 - (1u64 << 32)) as u32
}

/// Each class's [`compute_excess`]: what a slab's free-check limit grows by
/// for each object handed out by bumping.
static EXCESS: [u32; CLASSES] = {
    let mut t = [0u32; CLASSES];
    let mut c = 0;
    while c < CLASSES {
        t[c] = compute_excess(compute_size(c));
        c += 1;
    }
    t
};

/// Class sizes by `class1` (a slab's class plus one, as its metadata holds
/// it; 0, a medium block, and values past the last class give 0): the free
/// path counts a block's bytes straight from the byte it reads, with no
/// arithmetic and no bounds test.
static SIZES1: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut c = 0;
    while c < CLASSES {
        t[c + 1] = compute_size(c) as u16;
        c += 1;
    }
    t
};

/// The byte size of the class whose `class1` (class plus one) is given; 0
/// for 0.
#[inline(always)]
pub(crate) fn class1_size(class1: u8) -> usize {
    SIZES1[class1 as usize] as usize
}

/// The class of every size in 16-byte steps up to `SMALL_MAX`: every class
/// size is a multiple of 16, so a size and its round-up to 16 share a class.
static BY_16: [u8; crate::layout::SMALL_MAX / 16 + 1] = {
    let mut t = [0u8; crate::layout::SMALL_MAX / 16 + 1];
    let mut i = 0;
    while i < t.len() {
        t[i] = compute_class(i * 16) as u8;
        // What `class_of` tells the compiler.
        assert!((t[i] as usize) < CLASSES);
        i += 1;
    }
    t
};

/// The divisibility magic of class `c` ([`compute_magic`]).
#[inline]
pub(crate) fn class_magic(c: usize) -> u32 {
    compute_magic(class_size(c))
}

/// The excess of class `c` ([`compute_magic`]; `c < CLASSES`).
#[inline(always)]
pub(crate) fn class_excess(c: usize) -> u32 {
    EXCESS[c % CLASSES]
}

/// The byte size of class `c` (`c < CLASSES`).
#[inline(always)]
pub(crate) fn class_size(c: usize) -> usize {
    debug_assert!(c < CLASSES);
    // The mask keeps the index in bounds without a panic branch.
    SIZES[c % CLASSES] as usize
}

/// The smallest class that holds `size` bytes (`size <= SMALL_MAX`; 0 counts as 1).
#[inline(always)]
pub(crate) fn class_of(size: usize) -> usize {
    debug_assert!(size <= crate::layout::SMALL_MAX);
    let c = BY_16[size.min(crate::layout::SMALL_MAX).div_ceil(16)] as usize;
    // SAFETY: every entry of the table is below CLASSES (asserted as it is
    // built), so the callers' indexing by `c` needs no mask or bounds test.
    unsafe { core::hint::assert_unchecked(c < CLASSES) };
    c
}

/// The smallest class that holds `size` bytes at alignment `align`, if any.
/// Slabs start at a 64 KiB boundary and objects sit at multiples of the class
/// size, so a class whose size is a multiple of `align` gives aligned objects.
#[inline(always)]
pub(crate) fn class_for(size: usize, align: usize) -> Option<usize> {
    if size > crate::layout::SMALL_MAX || align > crate::layout::SMALL_MAX {
        return None;
    }
    if align <= 16 {
        // Class 0 is 16 bytes: every class is 16-aligned.
        return Some(class_of(size));
    }
    let mut c = class_of(size.max(align));
    while c < CLASSES {
        if class_size(c).is_multiple_of(align) {
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
        assert_eq!(class_size(CLASSES - 1), crate::layout::SMALL_MAX);
        for s in 0..=crate::layout::SMALL_MAX {
            let c = class_of(s);
            assert!(class_size(c) >= s.max(1), "size {s}");
            assert!(
                c == 0 || class_size(c - 1) < s,
                "size {s} not in smallest class"
            );
        }
    }

    #[test]
    fn tables_match_the_formulas() {
        for c in 0..CLASSES {
            assert_eq!(class_size(c), compute_size(c), "class {c}");
        }
        for s in 0..=crate::layout::SMALL_MAX {
            assert_eq!(class_of(s), compute_class(s), "size {s}");
        }
        assert_eq!(class1_size(0), 0);
        for c1 in 1..=255u8 {
            let want = if (c1 as usize) <= CLASSES {
                compute_size(c1 as usize - 1)
            } else {
                0
            };
            assert_eq!(class1_size(c1), want, "class1 {c1}");
        }
    }

    #[test]
    fn aligned_classes_are_aligned() {
        let mut a = 1;
        while a <= crate::layout::SMALL_MAX {
            for s in [0, 1, 17, 100, 1000, 5000] {
                if let Some(c) = class_for(s, a) {
                    assert!(class_size(c) >= s && class_size(c).is_multiple_of(a.max(16)));
                }
            }
            a *= 2;
        }
    }
}
