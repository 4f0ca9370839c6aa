//! Tensor element types as safetensors names them, and the bit layout of the float ones.

/// A tensor's element type.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    Bool,
    U8,
    I8,
    F8E4M3,
    F8E5M2,
    U16,
    I16,
    F16,
    BF16,
    U32,
    I32,
    F32,
    U64,
    I64,
    F64,
}

const ALL: [DType; 15] = [
    DType::Bool,
    DType::U8,
    DType::I8,
    DType::F8E4M3,
    DType::F8E5M2,
    DType::U16,
    DType::I16,
    DType::F16,
    DType::BF16,
    DType::U32,
    DType::I32,
    DType::F32,
    DType::U64,
    DType::I64,
    DType::F64,
];

/// Where the fields of a float type lie in its little-endian word: `[mantissa | exponent | sign]`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FloatBits {
    /// Width of the word (16 or 32).
    pub bits: u32,
    /// Exponent bits (they sit just below the sign).
    pub exponent: u32,
    /// Mantissa bits (the low bits of the word).
    pub mantissa: u32,
}

impl FloatBits {
    /// Width of the sign + mantissa part kept verbatim.
    pub fn raw_bits(self) -> u32 {
        self.mantissa + 1
    }
}

impl DType {
    /// The safetensors spelling (`"BF16"`, `"F32"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "BOOL",
            DType::U8 => "U8",
            DType::I8 => "I8",
            DType::F8E4M3 => "F8_E4M3",
            DType::F8E5M2 => "F8_E5M2",
            DType::U16 => "U16",
            DType::I16 => "I16",
            DType::F16 => "F16",
            DType::BF16 => "BF16",
            DType::U32 => "U32",
            DType::I32 => "I32",
            DType::F32 => "F32",
            DType::U64 => "U64",
            DType::I64 => "I64",
            DType::F64 => "F64",
        }
    }

    /// Parses a safetensors dtype name.
    pub fn from_name(name: &str) -> Option<DType> {
        ALL.into_iter().find(|d| d.name() == name)
    }

    /// The code stored in tensor archives (`docs/FORMAT.md` §8).
    pub fn code(self) -> u8 {
        ALL.iter().position(|&d| d == self).unwrap_or(0) as u8
    }

    /// Inverse of [`DType::code`].
    pub fn from_code(code: u8) -> Option<DType> {
        ALL.get(usize::from(code)).copied()
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 | DType::F8E4M3 | DType::F8E5M2 => 1,
            DType::U16 | DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::U64 | DType::I64 | DType::F64 => 8,
        }
    }

    /// The float types whose exponent glyd codes apart from sign and mantissa.
    pub fn float_bits(self) -> Option<FloatBits> {
        let (bits, exponent, mantissa) = match self {
            DType::BF16 => (16, 8, 7),
            DType::F16 => (16, 5, 10),
            DType::F32 => (32, 8, 23),
            _ => return None,
        };
        Some(FloatBits {
            bits,
            exponent,
            mantissa,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_round_trip() {
        for d in ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
            assert_eq!(DType::from_code(d.code()), Some(d));
        }
        assert_eq!(DType::from_name("F4"), None);
        assert_eq!(DType::from_code(15), None);
    }
}
