//! The byte format of a snapshot file, and the float types it can encode
//! (chosen by `TypeId`, so the generic `T: Float` of generated code needs no
//! byte-conversion bound).
//!
//! Layout, little-endian: `b"PDCK"`, format version (1 byte), scalar tag
//! (1 byte), 2 zero bytes, float count (u64), integer count (u64), the
//! floats (each `Dual` as `re` then `eps`), the integers (`i128`).

use std::any::{Any, TypeId};
use std::io::{self, Write};

use super::Snapshot;
use crate::Dual;

const MAGIC: [u8; 4] = *b"PDCK";
const VERSION: u8 = 1;
const HEADER_BYTES: usize = 24;

/// A float type with a fixed little-endian encoding.
trait DiskScalar: Copy + 'static {
    /// Identifies the type in the file header.
    const TAG: u8;
    /// Encoded size in bytes.
    const WIDTH: usize;
    fn write_to(self, out: &mut impl Write) -> io::Result<()>;
    /// Decodes from exactly `WIDTH` bytes.
    fn read_from(bytes: &[u8]) -> Self;
}

impl DiskScalar for f32 {
    const TAG: u8 = 1;
    const WIDTH: usize = 4;
    fn write_to(self, out: &mut impl Write) -> io::Result<()> {
        out.write_all(&self.to_le_bytes())
    }
    fn read_from(bytes: &[u8]) -> Self {
        f32::from_le_bytes(bytes.try_into().expect("4 bytes"))
    }
}

impl DiskScalar for f64 {
    const TAG: u8 = 2;
    const WIDTH: usize = 8;
    fn write_to(self, out: &mut impl Write) -> io::Result<()> {
        out.write_all(&self.to_le_bytes())
    }
    fn read_from(bytes: &[u8]) -> Self {
        f64::from_le_bytes(bytes.try_into().expect("8 bytes"))
    }
}

/// `Dual<S>` is tagged `S::TAG + 16`: `Dual<f64>` is 18, `Dual<Dual<f64>>` 34.
impl<S: DiskScalar> DiskScalar for Dual<S> {
    const TAG: u8 = S::TAG + 16;
    const WIDTH: usize = 2 * S::WIDTH;
    fn write_to(self, out: &mut impl Write) -> io::Result<()> {
        self.re.write_to(out)?;
        self.eps.write_to(out)
    }
    fn read_from(bytes: &[u8]) -> Self {
        let (re, eps) = bytes.split_at(S::WIDTH);
        Dual::new(S::read_from(re), S::read_from(eps))
    }
}

/// The tag and width of `T` if it has a disk encoding.
pub(crate) fn scalar_format<T: 'static>() -> Option<(u8, usize)> {
    fn format<S: DiskScalar>() -> (TypeId, u8, usize) {
        (TypeId::of::<S>(), S::TAG, S::WIDTH)
    }
    let known = [
        format::<f32>(),
        format::<f64>(),
        format::<Dual<f32>>(),
        format::<Dual<f64>>(),
        format::<Dual<Dual<f32>>>(),
        format::<Dual<Dual<f64>>>(),
    ];
    let id = TypeId::of::<T>();
    known.iter().find(|k| k.0 == id).map(|k| (k.1, k.2))
}

fn write_values<S: DiskScalar>(values: &[S], out: &mut impl Write) -> io::Result<()> {
    values.iter().try_for_each(|v| v.write_to(out))
}

/// Writes a `Vec` of floats of a supported type; `false` for any other type.
fn write_floats(any: &dyn Any, out: &mut impl Write) -> io::Result<bool> {
    if let Some(values) = any.downcast_ref::<Vec<f32>>() {
        write_values(values, out)?;
    } else if let Some(values) = any.downcast_ref::<Vec<f64>>() {
        write_values(values, out)?;
    } else if let Some(values) = any.downcast_ref::<Vec<Dual<f32>>>() {
        write_values(values, out)?;
    } else if let Some(values) = any.downcast_ref::<Vec<Dual<f64>>>() {
        write_values(values, out)?;
    } else if let Some(values) = any.downcast_ref::<Vec<Dual<Dual<f32>>>>() {
        write_values(values, out)?;
    } else if let Some(values) = any.downcast_ref::<Vec<Dual<Dual<f64>>>>() {
        write_values(values, out)?;
    } else {
        return Ok(false);
    }
    Ok(true)
}

fn read_values<S: DiskScalar>(bytes: &[u8], out: &mut Vec<S>) {
    out.clear();
    out.extend(bytes.chunks_exact(S::WIDTH).map(S::read_from));
}

/// Decodes into a `Vec` of floats of a supported type; `false` for any
/// other type.
fn read_floats(bytes: &[u8], any: &mut dyn Any) -> bool {
    if let Some(out) = any.downcast_mut::<Vec<f32>>() {
        read_values(bytes, out);
    } else if let Some(out) = any.downcast_mut::<Vec<f64>>() {
        read_values(bytes, out);
    } else if let Some(out) = any.downcast_mut::<Vec<Dual<f32>>>() {
        read_values(bytes, out);
    } else if let Some(out) = any.downcast_mut::<Vec<Dual<f64>>>() {
        read_values(bytes, out);
    } else if let Some(out) = any.downcast_mut::<Vec<Dual<Dual<f32>>>>() {
        read_values(bytes, out);
    } else if let Some(out) = any.downcast_mut::<Vec<Dual<Dual<f64>>>>() {
        read_values(bytes, out);
    } else {
        return false;
    }
    true
}

/// The file size of `snapshot` (0 if `T` has no disk encoding).
pub(crate) fn encoded_len<T: Copy + 'static>(snapshot: &Snapshot<T>) -> usize {
    scalar_format::<T>().map_or(0, |(_, width)| {
        HEADER_BYTES + snapshot.floats().len() * width + snapshot.ints().len() * 16
    })
}

/// Writes `snapshot` in the file format.
///
/// # Errors
/// The writer's errors; `InvalidInput` if `T` has no disk encoding.
pub(crate) fn write_snapshot<T: Copy + 'static>(
    snapshot: &Snapshot<T>,
    out: &mut impl Write,
) -> io::Result<()> {
    let unsupported = || io::Error::new(io::ErrorKind::InvalidInput, "unsupported float type");
    let (tag, _) = scalar_format::<T>().ok_or_else(unsupported)?;
    out.write_all(&MAGIC)?;
    out.write_all(&[VERSION, tag, 0, 0])?;
    out.write_all(&(snapshot.floats().len() as u64).to_le_bytes())?;
    out.write_all(&(snapshot.ints().len() as u64).to_le_bytes())?;
    if !write_floats(snapshot.float_vec(), out)? {
        return Err(unsupported());
    }
    snapshot
        .ints()
        .iter()
        .try_for_each(|i| out.write_all(&i.to_le_bytes()))
}

/// Decodes a whole file into `snapshot`.
///
/// # Errors
/// What does not match, in words: magic, version, float type, or length.
pub(crate) fn read_snapshot<T: Copy + 'static>(
    bytes: &[u8],
    snapshot: &mut Snapshot<T>,
) -> Result<(), String> {
    let (tag, width) = scalar_format::<T>().ok_or("unsupported float type")?;
    if bytes.len() < HEADER_BYTES || bytes[..4] != MAGIC {
        return Err("not a phidiff snapshot file".into());
    }
    if bytes[4] != VERSION {
        return Err(format!("format version {} (expected {VERSION})", bytes[4]));
    }
    if bytes[5] != tag {
        return Err(format!(
            "written for float type tag {}, read as `{}` (tag {tag})",
            bytes[5],
            std::any::type_name::<T>()
        ));
    }
    let count = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let (n_floats, n_ints) = (count(8), count(16));
    let expected = (n_floats as u128) * width as u128 + (n_ints as u128) * 16;
    if expected != (bytes.len() - HEADER_BYTES) as u128 {
        return Err(format!(
            "{} payload bytes for {n_floats} floats and {n_ints} integers",
            bytes.len() - HEADER_BYTES
        ));
    }
    let (float_bytes, int_bytes) = bytes[HEADER_BYTES..].split_at(n_floats as usize * width);
    let (floats, ints) = snapshot.parts_mut();
    let decoded = read_floats(float_bytes, floats);
    debug_assert!(decoded, "the tag was checked");
    ints.clear();
    ints.extend(
        int_bytes
            .chunks_exact(16)
            .map(|b| i128::from_le_bytes(b.try_into().expect("16 bytes"))),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: Copy + PartialEq + core::fmt::Debug + 'static>(values: &[T]) {
        let mut snap = Snapshot::new();
        snap.push_floats(values);
        snap.push_int(-1 << 100);
        let mut bytes = Vec::new();
        write_snapshot(&snap, &mut bytes).unwrap();
        let (_, width) = scalar_format::<T>().unwrap();
        assert_eq!(bytes.len(), HEADER_BYTES + values.len() * width + 2 * 16);
        assert_eq!(bytes.len(), encoded_len(&snap));
        let mut back = Snapshot::<T>::new();
        read_snapshot(&bytes, &mut back).unwrap();
        assert_eq!(back.floats(), snap.floats());
        assert_eq!(back.ints(), snap.ints());
    }

    #[test]
    fn every_supported_type_round_trips_bit_for_bit() {
        round_trip(&[1.5_f32, -0.0, f32::MIN_POSITIVE]);
        round_trip(&[core::f64::consts::PI, f64::MAX]);
        round_trip(&[Dual::new(1.0_f32, 2.0)]);
        round_trip(&[Dual::new(1.0_f64, -2.5), Dual::new(3.0, 4.0)]);
        round_trip(&[Dual::new(Dual::new(1.0_f32, 2.0), Dual::new(3.0, 4.0))]);
        round_trip(&[Dual::new(Dual::new(1.0_f64, 2.0), Dual::new(3.0, 4.0))]);
        // NaN compares unequal, so check its bits.
        let mut bytes = Vec::new();
        write_snapshot(&Snapshot::from_parts(vec![f64::NAN], vec![]), &mut bytes).unwrap();
        let mut back = Snapshot::<f64>::new();
        read_snapshot(&bytes, &mut back).unwrap();
        assert_eq!(back.floats()[0].to_bits(), f64::NAN.to_bits());
    }

    #[test]
    fn nested_dual_tags_are_distinct() {
        let tags = [
            scalar_format::<f32>(),
            scalar_format::<f64>(),
            scalar_format::<Dual<f32>>(),
            scalar_format::<Dual<f64>>(),
            scalar_format::<Dual<Dual<f32>>>(),
            scalar_format::<Dual<Dual<f64>>>(),
        ]
        .map(|f| f.unwrap().0);
        assert_eq!(tags, [1, 2, 17, 18, 33, 34]);
        assert_eq!(scalar_format::<u8>(), None);
        assert_eq!(scalar_format::<Dual<Dual<Dual<f64>>>>(), None);
    }

    #[test]
    fn mismatches_are_reported_not_misread() {
        let mut bytes = Vec::new();
        write_snapshot(&Snapshot::from_parts(vec![1.0_f64], vec![2]), &mut bytes).unwrap();
        let mut as_f32 = Snapshot::<f32>::new();
        let err = read_snapshot(&bytes, &mut as_f32).unwrap_err();
        assert!(err.contains("read as `f32`"), "{err}");
        let mut back = Snapshot::<f64>::new();
        let err = read_snapshot(&bytes[..bytes.len() - 1], &mut back).unwrap_err();
        assert!(err.contains("payload bytes"), "{err}");
        assert!(read_snapshot(b"not a snapshot at all, no", &mut back).is_err());
        let unsupported = write_snapshot(&Snapshot::from_parts(vec![1_u8], vec![]), &mut bytes);
        assert_eq!(unsupported.unwrap_err().kind(), io::ErrorKind::InvalidInput);
    }
}
