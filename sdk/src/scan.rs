//! Comparing a column's items with one value, many at a time.
//!
//! Why the scans look the way they do: in the sandbox, every loop
//! checks the epoch deadline on its back-edge, and the check's out-of-line
//! call makes Cranelift keep the loop's values on the stack (wasmtime#7244),
//! so each trip of a loop costs several reloads. The scans therefore compare
//! 64 items per trip, four at a time on the vector unit, into a bit mask, and
//! handle the (few) hits outside that loop. Natively the same code runs on
//! SSE2; the two builds do the same work.

/// Items compared per trip of a scan: the bits of a `u64`.
pub(crate) const MASK_BITS: usize = 64;

/// Bit `i` set where `chunk[i] == wanted` (`chunk` holds at most 64 items).
#[inline(always)]
pub(crate) fn equal_mask(chunk: &[u32], wanted: u32) -> u64 {
    match <&[u32; MASK_BITS]>::try_from(chunk) {
        Ok(full) => full
            .as_chunks::<4>()
            .0
            .iter()
            .enumerate()
            .fold(0, |mask, (index, quad)| {
                mask | (u64::from(lanes::equal(quad, wanted)) << (index * 4))
            }),
        Err(_) => mask_where(chunk, |item| item == wanted),
    }
}

/// Bit `i` set where `chunk[i] > value`, for the first 16 items of `chunk`.
/// The comparison is signed (one instruction on every vector unit, where
/// an unsigned one is four on x86): the offsets it serves index a list in
/// a 32-bit address space, so they are below 2^31 and order alike.
#[inline(always)]
pub(crate) fn above_mask(chunk: &[u32], value: u32) -> u16 {
    match chunk.first_chunk::<16>() {
        Some(sixteen) => sixteen
            .as_chunks::<4>()
            .0
            .iter()
            .enumerate()
            .fold(0, |mask, (index, quad)| {
                mask | (u16::from(lanes::above(quad, value)) << (index * 4))
            }),
        None => mask_where(chunk, |item| item as i32 > value as i32) as u16,
    }
}

/// Bit `i` set where `keep(items[i])`, one item at a time (`items` holds at
/// most 64): the tail of a scan, the targets without a vector unit, and
/// what the vector versions are tested against.
#[inline(always)]
fn mask_where(items: &[u32], keep: impl Fn(u32) -> bool) -> u64 {
    items.iter().enumerate().fold(0, |mask, (bit, &item)| {
        mask | (u64::from(keep(item)) << bit)
    })
}

/// Four comparisons at once, on the vector unit where there is one.
mod lanes {
    /// Bit `i` set where `quad[i] == wanted`.
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    #[inline(always)]
    #[allow(unsafe_code)]
    pub fn equal(quad: &[u32; 4], wanted: u32) -> u8 {
        use core::arch::wasm32::{i32x4_bitmask, u32x4_eq, u32x4_splat, v128, v128_load};
        // SAFETY: `quad` is 16 readable bytes; v128.load needs no alignment.
        let items = unsafe { v128_load(quad.as_ptr().cast::<v128>()) };
        i32x4_bitmask(u32x4_eq(items, u32x4_splat(wanted)))
    }

    /// Bit `i` set where `quad[i] > value`, compared as `i32`.
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    #[inline(always)]
    #[allow(unsafe_code)]
    pub fn above(quad: &[u32; 4], value: u32) -> u8 {
        use core::arch::wasm32::{i32x4_bitmask, i32x4_gt, i32x4_splat, v128, v128_load};
        // SAFETY: `quad` is 16 readable bytes; v128.load needs no alignment.
        let items = unsafe { v128_load(quad.as_ptr().cast::<v128>()) };
        i32x4_bitmask(i32x4_gt(items, i32x4_splat(value as i32)))
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    #[allow(unsafe_code)]
    pub fn equal(quad: &[u32; 4], wanted: u32) -> u8 {
        use core::arch::x86_64::{
            __m128i, _mm_castsi128_ps, _mm_cmpeq_epi32, _mm_loadu_si128, _mm_movemask_ps,
            _mm_set1_epi32,
        };
        // SAFETY: `quad` is 16 readable bytes and loadu needs no alignment;
        // SSE2 is part of every x86_64 target.
        unsafe {
            let items = _mm_loadu_si128(quad.as_ptr().cast::<__m128i>());
            let equal = _mm_cmpeq_epi32(items, _mm_set1_epi32(wanted as i32));
            _mm_movemask_ps(_mm_castsi128_ps(equal)) as u8
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    #[allow(unsafe_code)]
    pub fn above(quad: &[u32; 4], value: u32) -> u8 {
        use core::arch::x86_64::{
            __m128i, _mm_castsi128_ps, _mm_cmpgt_epi32, _mm_loadu_si128, _mm_movemask_ps,
            _mm_set1_epi32,
        };
        // SAFETY: as for `equal`.
        unsafe {
            let items = _mm_loadu_si128(quad.as_ptr().cast::<__m128i>());
            let above = _mm_cmpgt_epi32(items, _mm_set1_epi32(value as i32));
            _mm_movemask_ps(_mm_castsi128_ps(above)) as u8
        }
    }

    #[cfg(not(any(
        all(target_arch = "wasm32", target_feature = "simd128"),
        target_arch = "x86_64"
    )))]
    #[inline(always)]
    pub fn equal(quad: &[u32; 4], wanted: u32) -> u8 {
        super::mask_where(quad, |item| item == wanted) as u8
    }

    #[cfg(not(any(
        all(target_arch = "wasm32", target_feature = "simd128"),
        target_arch = "x86_64"
    )))]
    #[inline(always)]
    pub fn above(quad: &[u32; 4], value: u32) -> u8 {
        super::mask_where(quad, |item| item as i32 > value as i32) as u8
    }
}

/// `base + i` for every bit `i` set in `mask`, lowest first.
#[inline(always)]
pub(crate) fn set_bits(mut mask: u64, base: usize) -> impl Iterator<Item = usize> {
    core::iter::from_fn(move || {
        (mask != 0).then(|| {
            let bit = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            base + bit
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_compare_matches_the_scalar_one() {
        let quads = [
            [1, 2, 3, 4],
            [7, 7, 7, 7],
            [0, 7, 0, 7],
            [u32::MAX, 7, 7, 0],
            [6, 8, 9, (1 << 31) - 1],
        ];
        for quad in quads {
            for wanted in [0, 7, u32::MAX] {
                assert_eq!(
                    u64::from(lanes::equal(&quad, wanted)),
                    mask_where(&quad, |item| item == wanted),
                    "{quad:?} == {wanted}"
                );
                assert_eq!(
                    u64::from(lanes::above(&quad, wanted)),
                    mask_where(&quad, |item| item as i32 > wanted as i32),
                    "{quad:?} > {wanted}"
                );
            }
        }
    }
}
