//! A TPC-H-like generator for tests: customer, orders and lineitem as CSV text with the
//! columns and value spellings of `tpchgen-cli` and random values from a fixed seed, small
//! enough for a debug test; and TPC-H Q1, Q3 and Q6 over them, with `{customer}`, `{orders}`
//! and `{lineitem}` where the tables' names go.

use std::fmt::Write as _;

/// xorshift64*: the same tables on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// `YYYY-MM-DD` of day `z` after 1970-01-01 (the civil-from-days algorithm of Howard
/// Hinnant's date library).
fn date(z: i64) -> String {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn cents(c: u64) -> String {
    format!("{}.{:02}", c / 100, c % 100)
}

/// customer, orders and lineitem as CSV text, with the columns the queries use (and a few
/// more, so projection matters).
pub fn tables() -> [(&'static str, String); 3] {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let segments = [
        "AUTOMOBILE",
        "BUILDING",
        "FURNITURE",
        "HOUSEHOLD",
        "MACHINERY",
    ];
    let mut customer = String::from("c_custkey,c_name,c_mktsegment\n");
    for c in 1..=300 {
        let seg = segments[r.below(5) as usize];
        writeln!(customer, "{c},Customer#{c:09},{seg}").unwrap();
    }
    let mut orders =
        String::from("o_orderkey,o_custkey,o_orderstatus,o_orderdate,o_shippriority\n");
    let mut lineitem = String::from(
        "l_orderkey,l_linenumber,l_quantity,l_extendedprice,l_discount,l_tax,l_returnflag,l_linestatus,l_shipdate,l_comment\n",
    );
    let first = 8035; // 1992-01-01
    for o in 1..=6000u64 {
        let key = o * 4 - r.below(3); // sparse keys, like TPC-H's
        let day = first + r.below(2400) as i64;
        let status = ["O", "F", "P"][r.below(3) as usize];
        writeln!(
            orders,
            "{key},{},{status},{},0",
            1 + r.below(300),
            date(day)
        )
        .unwrap();
        for line in 1..=1 + r.below(7) {
            let qty = 1 + r.below(50);
            let price = qty * (90_000 + r.below(1_000_000)) / 10;
            let ship = day + 1 + r.below(120) as i64;
            let flag = if ship > 9298 {
                "N"
            } else {
                ["R", "A"][r.below(2) as usize]
            };
            let ls = if ship > 9298 { "O" } else { "F" };
            writeln!(
                lineitem,
                "{key},{line},{qty},{},{},{},{flag},{ls},{},\"note {}\"",
                cents(price),
                cents(r.below(11)),
                cents(r.below(9)),
                date(ship),
                r.below(1000)
            )
            .unwrap();
        }
    }
    [
        ("customer", customer),
        ("orders", orders),
        ("lineitem", lineitem),
    ]
}

pub const Q1: &str = "select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty, \
    sum(l_extendedprice) as sum_base_price, sum(l_extendedprice * (1 - l_discount)) as sum_disc_price, \
    sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, avg(l_quantity) as avg_qty, \
    avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc, count(*) as count_order \
    from {lineitem} where l_shipdate <= date '1998-12-01' - interval '90' day \
    group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus";

pub const Q3: &str =
    "select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate, \
    o_shippriority from {customer}, {orders}, {lineitem} where c_mktsegment = 'BUILDING' \
    and c_custkey = o_custkey and l_orderkey = o_orderkey and o_orderdate < date '1995-03-15' \
    and l_shipdate > date '1995-03-15' group by l_orderkey, o_orderdate, o_shippriority \
    order by revenue desc, o_orderdate, l_orderkey limit 10";

pub const Q6: &str = "select sum(l_extendedprice * l_discount) as revenue from {lineitem} \
    where l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' \
    and l_discount between 0.05 and 0.07 and l_quantity < 24";

/// `query` with its `{table}` placeholders replaced by `name(table)`.
pub fn named(query: &str, name: impl Fn(&str) -> String) -> String {
    ["customer", "orders", "lineitem"]
        .iter()
        .fold(query.to_string(), |q, t| {
            q.replace(&format!("{{{t}}}"), &name(t))
        })
}
