//! Which optional x86-64 instructions the CPU has: the codec's hot loops have FAST PATH copies
//! compiled with them (`#[target_feature]`), chosen at run time with these checks.

/// Whether the CPU has BMI2 and LZCNT: shifts, masks and bit counts by amounts known only at
/// run time (bit-field widths, table logs) each take one instruction (`shlx`, `shrx`, `bzhi`,
/// `lzcnt`), where baseline x86-64 moves the count through `cl` (three micro-ops on Intel
/// cores). Every x86-64 CPU since 2013-2015 has both.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn has_bmi2() -> bool {
    std::is_x86_feature_detected!("bmi2") && std::is_x86_feature_detected!("lzcnt")
}

/// Whether the CPU has AVX-512 (F, BW and VBMI), BMI2 and LZCNT: sixteen 32-bit lanes with
/// per-lane shifts, gathers and permutes for the entropy decoder's sequence pass, and byte
/// permutes for its match copies (Ice Lake, Sapphire Rapids, Zen 4 and later).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn has_avx512() -> bool {
    std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("avx512vbmi")
        && has_bmi2()
}

/// The body of a function with fast paths: runs `$call` (a call of an `#[inline(always)]`
/// body) compiled for the first listed instruction set whose run-time check holds, else as the
/// baseline build compiled it. For each set the body is inlined into a `#[target_feature]`
/// function built here, so one body serves every build and this macro holds the one `unsafe`
/// that calls them. `$check` tests for exactly the features `$features` names.
///
/// ```
/// #[inline(always)]
/// fn sum_with(v: &[u32]) -> u64 {
///     v.iter().map(|&x| u64::from(x)).sum()
/// }
///
/// pub fn sum(v: &[u32]) -> u64 {
///     glyd_core::multiversion!(fn(v: &[u32]) -> u64 => sum_with(v);
///         "avx2" if std::is_x86_feature_detected!("avx2"))
/// }
///
/// assert_eq!(sum(&[1, 2, 3]), 6);
/// ```
#[macro_export]
macro_rules! multiversion {
    (
        fn $(<$($g:ident),*>)? ($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? => $call:expr;
        $($features:literal if $check:expr),+ $(,)?
    ) => {
        $crate::multiversion!(@builds [$(<$($g),*>)?] [$($arg: $ty),*] [$(-> $ret)?] [$($arg),*]
            [$call] $([$features] [$check])+)
    };
    (@builds $gen:tt $params:tt $ret:tt $args:tt [$call:expr] $([$features:literal] [$check:expr])+) => {{
        #[cfg(target_arch = "x86_64")]
        {
            $($crate::multiversion!(@build $gen $params $ret $args [$call] [$features] [$check]);)+
        }
        $call
    }};
    (@build [$($gen:tt)*] [$($params:tt)*] [$($ret:tt)*] [$($args:tt)*] [$call:expr]
        [$features:literal] [$check:expr]) => {
        if $check {
            #[target_feature(enable = $features)]
            fn build $($gen)* ($($params)*) $($ret)* {
                $call
            }
            // SAFETY: `build` needs only the features `$check` has just found.
            return unsafe { build($($args)*) };
        }
    };
}
