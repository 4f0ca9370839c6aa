//! KV-cache pages from a real model: the keys and values of all-MiniLM-L6-v2's six attention
//! layers over a real log (`tests/data/minilm-kv.safetensors`, made by `tests/data/make_kv.py`),
//! cut into pages of 64 tokens × 12 heads × 32 dims, coded and decoded page by page in both
//! layouts, byte for byte.

use glyd_gpu::kv::{decode_page, encode_page, page_payload, GlydKvPageShape};
use glyd_gpu::safetensors;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/minilm-kv.safetensors"
);

#[test]
fn real_kv_pages_round_trip_and_shrink() {
    let bytes = std::fs::read(FIXTURE).unwrap();
    let h = safetensors::read_header(&mut &bytes[..], bytes.len() as u64).unwrap();
    let data = &bytes[h.data_offset() as usize..];
    assert_eq!(h.tensors.len(), 12);
    for layout in [0u32, 1] {
        let (mut raw, mut coded) = (0usize, 0usize);
        for t in &h.tensors {
            let [tokens, heads, head_dim] = t.shape[..] else {
                panic!("{:?}", t.shape)
            };
            let values = &data[t.start as usize..t.end as usize];
            let page_bytes = 64 * heads as usize * head_dim as usize * 2;
            assert_eq!(values.len() % page_bytes, 0, "{tokens} tokens");
            for page in values.chunks(page_bytes) {
                let shape = GlydKvPageShape {
                    tokens: 64,
                    heads: heads as u32,
                    head_dim: head_dim as u32,
                    dtype: 0,
                    layout,
                };
                let c = encode_page(&shape, page).unwrap();
                let mut back = vec![0u8; page.len()];
                decode_page(&c, &mut back).unwrap();
                assert_eq!(back, page, "{} layout {layout}", t.name);
                assert_eq!(page_payload(&c).unwrap().1, page.len() / 2);
                raw += page.len();
                coded += c.len();
            }
        }
        let bits = coded as f64 * 16.0 / raw as f64;
        eprintln!("layout {layout}: {bits:.3} bits/value");
        assert!(
            bits < 14.0,
            "layout {layout}: KV pages at {bits:.3} bits/value"
        );
    }
}
