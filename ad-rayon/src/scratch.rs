//! Reused scratch buffers for the per-iteration slots of parallel adjoints.
//!
//! Generated code allocates, per call, buffers as long as the parallel loop (the slots of
//! its shifted and computed-index additions). Freeing such a buffer after several threads
//! wrote it makes the allocator unmap pages that every thread has in its TLB: each unmap
//! interrupts all of them (a TLB shootdown), which on 2 threads made a stencil's gradient
//! slower than on 1. So dropped buffers go back to a small per-type pool and the next call
//! reuses them: at most [`POOL_BUFFERS`] buffers per element type, each at most
//! [`POOL_MAX_BYTES`], and at most [`POOL_TOTAL_BYTES`] in all; smaller, larger or further
//! ones are freed as usual. The pool keeps that memory until the process ends.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;

/// Buffers kept per element type.
pub const POOL_BUFFERS: usize = 8;
/// The largest buffer kept (bytes of capacity); larger ones are freed.
pub const POOL_MAX_BYTES: usize = 64 << 20;
/// The most bytes the pool keeps in all.
pub const POOL_TOTAL_BYTES: usize = 256 << 20;
/// Elements filled per parallel task by [`Scratch::filled`].
const FILL_CHUNK: usize = 1 << 15;
/// The smallest buffer kept: below this the allocator does not unmap.
const POOL_MIN_BYTES: usize = 64 << 10;

/// The kept buffers of each element type, and their bytes in all.
type Pools = Mutex<(HashMap<TypeId, Vec<Box<dyn Any + Send>>>, usize)>;

fn pools() -> &'static Pools {
    static POOLS: OnceLock<Pools> = OnceLock::new();
    POOLS.get_or_init(Default::default)
}

/// A `Vec<T>` of `len` copies of `fill`, from the pool when it holds one large enough.
/// Dropping it returns the buffer to the pool.
///
/// ```
/// use ad_rayon::Scratch;
///
/// let mut slots = Scratch::filled(0.0_f64, 100_000);
/// slots[7] = 1.5; // derefs to a slice
/// assert_eq!(slots.iter().sum::<f64>(), 1.5);
/// drop(slots); // back to the pool: the next call reuses the buffer, zeroed again
/// assert!(Scratch::filled(0.0_f64, 100_000).iter().all(|&v| v == 0.0));
/// ```
pub struct Scratch<T: Copy + Send + 'static> {
    data: Vec<T>,
}

impl<T: Copy + Send + Sync + 'static> Scratch<T> {
    /// `len` copies of `fill`. A reused buffer is filled in parallel (blocks of
    /// 32 768 elements), so zeroing the slots of a long loop is not a serial
    /// pass before it.
    pub fn filled(fill: T, len: usize) -> Self {
        let mut data = take::<T>(len);
        data.truncate(len);
        if data.len() > FILL_CHUNK {
            data.par_chunks_mut(FILL_CHUNK).for_each(|c| c.fill(fill));
        } else {
            data.fill(fill);
        }
        data.resize(len, fill);
        Scratch { data }
    }
}

/// The pooled vector with the largest capacity, if at least `len`, else a new one.
fn take<T: Send + 'static>(len: usize) -> Vec<T> {
    let mut guard = pools().lock().unwrap_or_else(|e| e.into_inner());
    let (pools, total) = &mut *guard;
    let Some(pool) = pools.get_mut(&TypeId::of::<T>()) else {
        return Vec::with_capacity(len);
    };
    let fits = pool.iter().position(|b| {
        b.downcast_ref::<Vec<T>>()
            .is_some_and(|v| v.capacity() >= len)
    });
    match fits {
        Some(k) => {
            let v = *pool
                .swap_remove(k)
                .downcast::<Vec<T>>()
                .expect("pools are keyed by type");
            *total -= v.capacity() * std::mem::size_of::<T>();
            v
        }
        None => Vec::with_capacity(len),
    }
}

impl<T: Copy + Send + 'static> Drop for Scratch<T> {
    fn drop(&mut self) {
        let data = std::mem::take(&mut self.data);
        let bytes = data.capacity() * std::mem::size_of::<T>();
        if !(POOL_MIN_BYTES..=POOL_MAX_BYTES).contains(&bytes) {
            return;
        }
        let mut guard = pools().lock().unwrap_or_else(|e| e.into_inner());
        let (pools, total) = &mut *guard;
        let pool = pools.entry(TypeId::of::<T>()).or_default();
        if pool.len() < POOL_BUFFERS && *total + bytes <= POOL_TOTAL_BYTES {
            *total += bytes;
            pool.push(Box::new(data));
        }
    }
}

impl<T: Copy + Send + 'static> Deref for Scratch<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.data
    }
}

impl<T: Copy + Send + 'static> DerefMut for Scratch<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_and_refills() {
        let a = Scratch::filled(1.5_f64, 100_000);
        assert!(a.iter().all(|x| *x == 1.5));
        let ptr = a.as_ptr();
        drop(a);
        let b = Scratch::filled(0.0_f64, 90_000);
        assert_eq!(b.len(), 90_000);
        assert!(b.iter().all(|x| *x == 0.0));
        // The same allocation came back (the pool is process-wide; another test could
        // take it first, so only the contents are asserted above).
        let _ = ptr;
    }

    #[test]
    fn small_buffers_are_not_kept() {
        let a = Scratch::filled(7_u8, 10);
        assert_eq!(&a[..], &[7; 10]);
    }
}
