//! Owned writes: `for_each_owned` and `for_each_owned_sum`.
mod common;

use ad_rayon::{for_each_owned, for_each_owned_sum, Owned, Rows, BLOCK};
use common::{bits, random_f64, same_on_all_threads};

#[test]
fn writes_elements_and_rows_of_buffers_of_different_types() {
    let range = 5..5 + 2 * BLOCK + 9;
    let mut y = vec![-1.0_f64; range.end + 4];
    let mut flags = vec![false; range.end + 1];
    let mut grid = vec![0_i64; 3 * (range.end + 4)];
    common::on_threads(8, || {
        for_each_owned(
            range.clone(),
            (
                &mut y,
                flags.as_mut_slice(),
                Rows {
                    data: &mut grid,
                    width: 3,
                },
            ),
            |i, (y, flags, grid)| {
                y.add(i, 1.0 + i as f64);
                flags.set(i, i % 2 == 0);
                grid.row(i).copy_from_slice(&[i as i64, 0, -(i as i64)]);
                grid.set(3 * i + 1, grid.get(3 * i) * 2);
            },
        )
    });
    for i in 0..y.len() {
        let inside = range.contains(&i);
        assert_eq!(y[i], if inside { i as f64 } else { -1.0 }, "y[{i}]");
        assert_eq!(
            flags.get(i).copied().unwrap_or(false),
            inside && i % 2 == 0,
            "flags[{i}]"
        );
        let row = &grid[3 * i..3 * i + 3];
        let want = if inside {
            [i as i64, 2 * i as i64, -(i as i64)]
        } else {
            [0; 3]
        };
        assert_eq!(row, want, "grid row {i}");
    }
}

#[test]
fn six_buffers_at_once() {
    let (mut a, mut b, mut c) = (vec![0u8; 600], vec![0u16; 600], vec![0u32; 600]);
    let (mut d, mut e, mut f) = (vec![0u64; 600], vec![0usize; 600], vec![0.0f32; 600]);
    for_each_owned(
        0..600,
        (&mut a, &mut b, &mut c, &mut d, &mut e, &mut f),
        |i, v| {
            v.0.set(i, 1);
            v.1.set(i, 2);
            v.2.set(i, 3);
            v.3.set(i, 4);
            v.4.set(i, i);
            v.5.set(i, 6.0);
        },
    );
    assert!(a.iter().all(|&x| x == 1) && b.iter().all(|&x| x == 2) && c.iter().all(|&x| x == 3));
    assert!(d.iter().all(|&x| x == 4) && f.iter().all(|&x| x == 6.0));
    assert!(e.iter().enumerate().all(|(i, &x)| x == i));
}

#[test]
#[should_panic(expected = "parallel iteration wrote outside its own element: index 6, owned 5..6")]
fn writing_a_neighbour_panics() {
    let mut y = vec![0.0_f64; 10];
    for_each_owned(5..6, (&mut y,), |i, (y,)| y.set(i + 1, 1.0));
}

#[test]
#[should_panic(
    expected = "parallel iteration wrote outside its own element: index 9, owned 10..12"
)]
fn writing_outside_the_row_panics() {
    let mut y = vec![0.0_f64; 20];
    for_each_owned(
        5..6,
        (Rows {
            data: &mut y,
            width: 2,
        },),
        |_, (y,)| y.add(9, 1.0),
    );
}

#[test]
#[should_panic(expected = "parallel iteration wrote outside its own row: row 4, owned row 5")]
fn taking_another_row_panics() {
    let mut y = vec![0.0_f64; 20];
    for_each_owned(5..6, ((y.as_mut_slice(), 2),), |i, (y,)| {
        y.row(i - 1)[0] = 1.0
    });
}

#[test]
#[should_panic(expected = "owned buffer 1: has 9 elements, range 0..10 with width 1 needs 10")]
fn short_buffer_panics() {
    let (mut a, mut b) = (vec![0.0_f64; 10], vec![0.0_f64; 9]);
    for_each_owned(0..10, (&mut a, &mut b), |_, _| {});
}

#[test]
fn empty_range_does_nothing() {
    let mut y: Vec<f64> = Vec::new();
    for_each_owned(3..3, (&mut y,), |i, _| panic!("called for {i}"));
    let [s] = for_each_owned_sum(3..3, (&mut y,), |_, _| [1.0_f64]);
    assert_eq!(s, 0.0);
}

#[test]
fn owned_sum_writes_and_reduces_independent_of_threads() {
    let range = 11..11 + 5 * BLOCK + 3;
    let (y, [s, c]) = same_on_all_threads(|| {
        let mut y = vec![0.0_f64; range.end];
        let total = for_each_owned_sum(range.clone(), (&mut y,), |i, (y,)| {
            y.set(i, random_f64(i).sin());
            [random_f64(i) * 1e8 + 1e-3, 1.0]
        });
        (bits(&y), total.map(f64::to_bits))
    });
    assert_eq!(f64::from_bits(c), range.len() as f64);
    assert!(f64::from_bits(s).is_finite());
    assert_eq!(y[range.start], random_f64(range.start).sin().to_bits());
}

// Indexing a chunk skips the slice's own bounds check (the window check covers it), so
// the window must never reach past the block's data: not in a short last row, and not
// when `focus` is called by hand with a row outside the block.

#[test]
#[should_panic(
    expected = "parallel iteration wrote outside its own element: index 10, owned 8..10"
)]
fn the_short_last_row_ends_at_the_buffer() {
    // 10 elements in rows of 4: the last row is 8..10, not 8..12.
    let mut y = vec![0.0_f64; 10];
    for_each_owned(
        0..3,
        (Rows {
            data: &mut y,
            width: 4,
        },),
        |i, (y,)| {
            if i == 2 {
                y[10] = 1.0;
            }
        },
    );
}

#[test]
#[should_panic(expected = "parallel iteration read outside its own element: index 3")]
fn focusing_a_row_before_the_block_reaches_nothing() {
    let mut y = vec![0.0_f64; 4 * (BLOCK + 2)];
    let mut blocks = Rows {
        data: &mut y,
        width: 4,
    }
    .split_blocks(&(0..BLOCK + 2), 0);
    // The second block starts at row BLOCK; row 0 belongs to the first one.
    let second = &mut blocks[1];
    <Rows<'_, f64> as Owned>::focus(second, 0);
    let _ = second[3];
}
