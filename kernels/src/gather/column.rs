//! The frame's columns: one enum variant per value type, so a frame can
//! mix types in one slice.

use super::Value;
use super::raw::{Dst, Src};

/// One input column of a frame.
///
/// [`Column::new`] picks the variant from the element type (as `From`
/// does); [`Column::len`] and [`Column::is_empty`] count its rows.
///
/// ```
/// use keel_kernels::gather::Column;
/// let ids = [7u64, 8, 9];
/// let c = Column::new(&ids);
/// assert!(matches!(c, Column::U64(_)));
/// assert_eq!(c.len(), 3);
/// assert!(matches!(Column::from(&[1i32][..]), Column::I32(_)));
/// assert!(Column::new::<f32>(&[]).is_empty());
/// ```
#[derive(Clone, Copy, Debug)]
#[allow(missing_docs)] // variants are the element types
pub enum Column<'a> {
    I64(&'a [i64]),
    I32(&'a [i32]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    F64(&'a [f64]),
    F32(&'a [f32]),
    U8(&'a [u8]),
}

/// One output column of a frame.
///
/// [`ColumnMut::new`] picks the variant from the element type (as `From`
/// does); [`ColumnMut::len`] and [`ColumnMut::is_empty`] count its rows.
///
/// ```
/// use keel_kernels::gather::ColumnMut;
/// let mut out = [0.0f64; 4];
/// let c = ColumnMut::new(&mut out);
/// assert!(matches!(c, ColumnMut::F64(_)));
/// assert_eq!(c.len(), 4);
/// assert!(ColumnMut::new::<u8>(&mut []).is_empty());
/// ```
#[derive(Debug)]
#[allow(missing_docs)] // variants are the element types
pub enum ColumnMut<'a> {
    I64(&'a mut [i64]),
    I32(&'a mut [i32]),
    U32(&'a mut [u32]),
    U64(&'a mut [u64]),
    F64(&'a mut [f64]),
    F32(&'a mut [f32]),
    U8(&'a mut [u8]),
}

impl<'a, T: Value> From<&'a [T]> for Column<'a> {
    fn from(s: &'a [T]) -> Self {
        T::column(s)
    }
}

impl<'a, T: Value> From<&'a mut [T]> for ColumnMut<'a> {
    fn from(s: &'a mut [T]) -> Self {
        T::column_mut(s)
    }
}

impl<'a> Column<'a> {
    /// The column over `s`, whatever its element type.
    pub fn new<T: Value>(s: &'a [T]) -> Self {
        T::column(s)
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.src().len()
    }

    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn src(&self) -> Src<'_> {
        match *self {
            Column::I64(s) => Value::src(s),
            Column::I32(s) => Value::src(s),
            Column::U32(s) => Value::src(s),
            Column::U64(s) => Value::src(s),
            Column::F64(s) => Value::src(s),
            Column::F32(s) => Value::src(s),
            Column::U8(s) => Value::src(s),
        }
    }

    pub(crate) fn kind(&self) -> u8 {
        match self {
            Column::I64(_) => 0,
            Column::I32(_) => 1,
            Column::U32(_) => 2,
            Column::U64(_) => 3,
            Column::F64(_) => 4,
            Column::F32(_) => 5,
            Column::U8(_) => 6,
        }
    }
}

impl<'a> ColumnMut<'a> {
    /// The output column over `s`, whatever its element type.
    pub fn new<T: Value>(s: &'a mut [T]) -> Self {
        T::column_mut(s)
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            ColumnMut::I64(s) => s.len(),
            ColumnMut::I32(s) => s.len(),
            ColumnMut::U32(s) => s.len(),
            ColumnMut::U64(s) => s.len(),
            ColumnMut::F64(s) => s.len(),
            ColumnMut::F32(s) => s.len(),
            ColumnMut::U8(s) => s.len(),
        }
    }

    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn dst(&mut self) -> Dst<'_> {
        match self {
            ColumnMut::I64(s) => Value::dst(s),
            ColumnMut::I32(s) => Value::dst(s),
            ColumnMut::U32(s) => Value::dst(s),
            ColumnMut::U64(s) => Value::dst(s),
            ColumnMut::F64(s) => Value::dst(s),
            ColumnMut::F32(s) => Value::dst(s),
            ColumnMut::U8(s) => Value::dst(s),
        }
    }

    pub(crate) fn kind(&self) -> u8 {
        match self {
            ColumnMut::I64(_) => 0,
            ColumnMut::I32(_) => 1,
            ColumnMut::U32(_) => 2,
            ColumnMut::U64(_) => 3,
            ColumnMut::F64(_) => 4,
            ColumnMut::F32(_) => 5,
            ColumnMut::U8(_) => 6,
        }
    }
}
