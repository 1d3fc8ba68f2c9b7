//! Frames: the shape checks of a multi-column gather, and the pass over its
//! columns in fixed stack arrays of raw views.

use super::raw::{Dst, Src};
use super::{Column, ColumnMut};
use crate::Error;

pub(crate) fn frame_types(columns: &[Column<'_>], outs: &[ColumnMut<'_>]) -> Result<(), Error> {
    if columns.len() != outs.len() {
        return Err(Error::ColumnCount {
            columns: columns.len(),
            outs: outs.len(),
        });
    }
    match columns
        .iter()
        .zip(outs.iter())
        .position(|(c, o)| c.kind() != o.kind())
    {
        Some(column) => Err(Error::ColumnType { column }),
        None => Ok(()),
    }
}

/// Frames are small (a handful of columns): raw views go into fixed stack
/// arrays, processed `FRAME_CHUNK` columns per pass, so no allocation is needed.
const FRAME_CHUNK: usize = 16;

/// Runs `f` over the frame `FRAME_CHUNK` columns at a time, after checking
/// the shapes of the whole frame (equal input lengths, `n` rows in every
/// output), so no column is written on a shape error.
pub(crate) fn with_frame(
    columns: &[Column<'_>],
    n: usize,
    outs: &mut [ColumnMut<'_>],
    mut f: impl FnMut(&[Src<'_>], &mut [Dst<'_>]) -> Result<(), Error>,
) -> Result<(), Error> {
    if let Some(first) = columns.first() {
        let expected = first.len();
        if let Some(column) = columns.iter().position(|c| c.len() != expected) {
            return Err(Error::ColumnLength {
                column,
                len: columns[column].len(),
                expected,
            });
        }
    }
    // Every output too, not only those of the pass `f` checks: a later
    // pass's short output must not leave the earlier passes written.
    if let Some(column) = outs.iter().position(|o| o.len() != n) {
        return Err(Error::OutputLength {
            column,
            expected: n,
            actual: outs[column].len(),
        });
    }
    for (ci, (cs, os)) in columns
        .chunks(FRAME_CHUNK)
        .zip(outs.chunks_mut(FRAME_CHUNK))
        .enumerate()
    {
        let mut srcs: [Src<'_>; FRAME_CHUNK] = core::array::from_fn(|_| Src::W1(&[]));
        let mut dsts: [Dst<'_>; FRAME_CHUNK] = core::array::from_fn(|_| Dst::W1(&mut []));
        for (k, c) in cs.iter().enumerate() {
            srcs[k] = c.src();
        }
        for (k, o) in os.iter_mut().enumerate() {
            dsts[k] = o.dst();
        }
        f(&srcs[..cs.len()], &mut dsts[..cs.len()]).map_err(|e| match e {
            Error::OutputLength {
                column,
                expected,
                actual,
            } => Error::OutputLength {
                column: column + ci * FRAME_CHUNK,
                expected,
                actual,
            },
            e => e,
        })?;
    }
    Ok(())
}
