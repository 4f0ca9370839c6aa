//! Command-line arguments: the clap definition, and the rewrite that lets `-1`..`-19` work the
//! way zstd users type them.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{ArgAction, Parser, Subcommand, ValueEnum};
use glyd_core::Level;

const AFTER_HELP: &str = "\
Levels:
  --fast, -1         LZ4-class compress speed (greedy LZ, no entropy stage)
  --lz, -2           better ratio than LZ4 and decode at least as fast
  --max, -3..-9      the default: zstd -3 class ratio (Huffman literals, tANS length codes)
  --ultra, -10..-19  zstd -19 class ratio: optimal parse (slow to write, fast to read)

Record mode (-r):
  Records are shredded into typed columns (integers, decimals, dates, timestamps, text;
  dictionaries where values repeat; templates with variables where text has numbers in
  it), each column coded on its own: delimited text (CSV, TSV, '|' or ';' separated),
  JSON lines (a column per key), SQL dumps (a table per COPY block or INSERT target),
  and logs (leading fields such as date, time and level as columns, the message as
  templates). The archive rebuilds the input byte for byte with -d, and reads as a
  table: see 'glyd inspect', 'glyd cat' and 'glyd sql'. Binary input, and small input
  that records do not make smaller, is compressed as with plain glyd.

Examples:
  glyd app.log                    write app.log.glyd (app.log is kept)
  glyd -r orders.csv              write orders.csv.glyd as a record archive
  glyd inspect orders.csv.glyd    schema, column types, codecs and sizes
  glyd cat --columns id,total orders.csv.glyd   print two columns as CSV
  glyd sql 'SELECT \"Level\", count(*) FROM logs GROUP BY 1' logs.glyd   query an archive
  glyd -d app.log.glyd            restore app.log
  glyd -dc app.log.glyd | less    decompress to standard output
  tar cf - dir | glyd > dir.tar.glyd
  glyd -t *.glyd                  check every block's checksum
  glyd -l app.log.glyd            sizes, ratio, level and blocks
  glyd -b app.log                 benchmark every level beside zstd and lz4
  glyd pack model.safetensors     write model.safetensors.glyd (exponents coded)
  glyd unpack model.safetensors.glyd restored.safetensors   the identical file
  glyd pack --base step1000.pt step2000.pt   a torch.save checkpoint against the previous

Exit status: 0 on success, 1 if any file failed, 2 on a usage error.";

/// glyd: lossless compression for the data pipelines move.
///
/// With no FILE, or when FILE is -, reads standard input and writes standard output.
#[derive(Parser, Debug)]
#[command(
    name = "glyd",
    version,
    about,
    long_about,
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true
)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Files to compress (or, with -d/-t/-l, to decompress, test or list)
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Compress (the default)
    #[arg(short = 'z', long, group = "mode")]
    pub compress: bool,

    /// Decompress FILE.glyd to FILE
    #[arg(short = 'd', long, visible_alias = "uncompress", group = "mode")]
    pub decompress: bool,

    /// Test integrity: decode every block and verify its checksum, writing nothing
    #[arg(short = 't', long, group = "mode")]
    pub test: bool,

    /// List: sizes, ratio, level and blocks of each compressed FILE
    #[arg(short = 'l', long, group = "mode")]
    pub list: bool,

    /// Benchmark every glyd level beside zstd and lz4 on each FILE (nothing is written)
    #[arg(short = 'b', long, group = "mode")]
    pub bench: bool,

    /// Write to standard output
    #[arg(short = 'c', long = "stdout")]
    pub stdout: bool,

    /// Write to FILE (only with a single input)
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Keep input files (the default)
    #[arg(short = 'k', long, overrides_with = "rm")]
    pub keep: bool,

    /// Remove each input file once its output is complete
    #[arg(long, overrides_with = "keep")]
    pub rm: bool,

    /// Overwrite existing outputs; write compressed data to a terminal
    #[arg(short = 'f', long)]
    pub force: bool,

    /// Print nothing but errors (no summary, no progress bar)
    #[arg(short = 'q', long, action = ArgAction::Count)]
    pub quiet: u8,

    /// Print more: a summary for every file even in pipes; -vv adds per-frame detail
    #[arg(short = 'v', long, action = ArgAction::Count)]
    pub verbose: u8,

    /// Worker threads (0 = all cores)
    #[arg(short = 'T', long, value_name = "N", default_value_t = 0)]
    pub threads: usize,

    /// Fastest compression (level 1)
    #[arg(long, group = "lvl")]
    pub fast: bool,

    /// Fast LZ with better ratio (level 2)
    #[arg(long, group = "lvl")]
    pub lz: bool,

    /// Entropy-coded LZ, the zstd -3 slot (levels 3..9; the default)
    #[arg(long, group = "lvl")]
    pub max: bool,

    /// Optimal parse, the zstd -19 slot (levels 10..19)
    #[arg(long, group = "lvl")]
    pub ultra: bool,

    /// Long-distance matching (with --max or --ultra): also find repeats up to 128 MiB back,
    /// e.g. a file stored twice in a tar. Blocks become 128 MiB (one thread per 128 MiB of
    /// input); decoding needs nothing new
    #[arg(long)]
    pub long: bool,

    /// Level number 1..19; also spelled -1 .. -19
    #[arg(long, value_name = "N", group = "lvl", value_parser = clap::value_parser!(u32).range(1..=19))]
    pub level: Option<u32>,

    /// Input bytes per independent block, e.g. 256K, 4M (1K ..= 128M; default 1M; 8M for --max, 32M for --ultra)
    #[arg(short = 'B', long, value_name = "SIZE", value_parser = parse_size)]
    pub block_size: Option<usize>,

    /// Record mode: shred delimited text into typed columns (plain compression if it is not
    /// records); with -b, benchmark record mode beside plain glyd and zstd
    #[arg(short = 'r', long)]
    pub records: bool,

    /// Record mode: the input's format instead of sniffing it
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        requires = "records",
        conflicts_with = "bench"
    )]
    pub format: Option<RecordFormat>,

    /// Record mode: the year of log times spelled without one (syslog's `Jun 14 15:16:01`);
    /// default: the input file's modification year (this year for standard input)
    #[arg(long, value_name = "YEAR", requires = "records", value_parser = clap::value_parser!(i16).range(0..=9999))]
    pub log_year: Option<i16>,

    /// Record mode: input bytes per row group, e.g. 4M (1K ..= 64M; default 16M)
    #[arg(long, value_name = "SIZE", value_parser = parse_size, requires = "records")]
    pub row_group: Option<usize>,

    /// Memory decoding may hold at once, e.g. 512M, 4G (default 1G): decoding runs fewer
    /// blocks or row groups in parallel to stay under it, and an archive that needs more for
    /// one block or row group is refused before anything is allocated for it. For glyd sink,
    /// its memory budget (default 512M): requests in flight and archives being written
    #[arg(long, value_name = "SIZE", global = true, value_parser = parse_memory)]
    pub memory: Option<u64>,

    /// Benchmark: timed runs per measurement (the median is reported)
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub bench_runs: u32,

    /// Benchmark: print Markdown tables (for docs/benchmarks/)
    #[arg(long)]
    pub markdown: bool,
}

/// Record formats `-r --format` accepts.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum RecordFormat {
    /// Comma-separated values (RFC 4180 quoting)
    Csv,
    /// Tab-separated values
    Tsv,
    /// Log lines: one record per line, coded as templates and variables
    Log,
    /// SQL dump: each PostgreSQL COPY block's rows as a table, other statements as lines
    Sql,
    /// JSON lines: one object per line, each top-level key a column
    Jsonl,
    /// Parquet: the file's Arrow data as columns (rebuilds as Parquet of the same data, not
    /// the same bytes)
    Parquet,
}

/// Output formats of `glyd cat`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum CatFormat {
    /// CSV with a header row
    Csv,
    /// One JSON object per line
    Jsonl,
    /// A Parquet file (zstd-compressed, the archive's Arrow types), to a file or pipe
    Parquet,
}

/// Output formats of `glyd sql`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum SqlFormat {
    /// An aligned table of the first --max-rows rows
    Table,
    /// CSV with a header row
    Csv,
    /// One JSON object per line
    Jsonl,
    /// A Parquet file (zstd-compressed), to a file or pipe: not to a terminal
    Parquet,
}

/// Layouts of `glyd pack`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum TensorLayout {
    /// Exponents Huffman-coded with the top mantissa bits: smallest, decoded on the CPU
    Dense,
    /// Fixed-width exponent tiers that a GPU decodes in parallel
    Gpu,
}

/// Commands on record archives and tensor archives.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Pack a model (a safetensors file, a folder of shards, or a torch.save checkpoint) into
    /// a tensor archive
    ///
    /// bf16, fp16 and fp32 tensors have their exponents coded and their sign and mantissa
    /// kept verbatim; other dtypes go through glyd --max. A torch.save checkpoint (.pt, the
    /// optimizer state included) has its storages coded as tensors, their dtypes read from its
    /// pickle without running it. `glyd unpack` writes back every file byte for byte.
    Pack {
        /// A .safetensors file, a torch.save checkpoint, or a folder holding them (with index
        /// JSON, config, ...)
        #[arg(value_name = "MODEL")]
        input: PathBuf,
        /// Archive to write (default: MODEL.glyd)
        #[arg(value_name = "OUT")]
        output: Option<PathBuf>,
        /// Float layout
        #[arg(long, value_enum, default_value = "dense")]
        layout: TensorLayout,
        /// A base model: tensors of a fine-tune are coded as their XOR with the base tensor
        /// of the same name, dtype and shape where that is smaller
        #[arg(long, value_name = "BASE")]
        base: Option<PathBuf>,
        /// Overwrite OUT if it exists
        #[arg(short, long)]
        force: bool,
        /// Print per tensor the exponent-entropy floor and the bits per value achieved
        #[arg(long)]
        report: bool,
    },
    /// Unpack a tensor archive back into the exact safetensors file or folder
    Unpack {
        /// Tensor archive (written by glyd pack)
        #[arg(value_name = "ARCHIVE")]
        archive: PathBuf,
        /// File or folder to write (default: ARCHIVE without .glyd)
        #[arg(value_name = "OUT")]
        output: Option<PathBuf>,
        /// The base model the archive was packed against (needed for XOR-coded tensors)
        #[arg(long, value_name = "BASE")]
        base: Option<PathBuf>,
        /// Write only this tensor's raw bytes (little-endian, row-major) to OUT
        #[arg(long, value_name = "NAME")]
        tensor: Option<String>,
        /// Overwrite OUT if it exists
        #[arg(short, long)]
        force: bool,
    },
    /// Show a record archive's schema and, per column, its type, codec, size and ratio (or a
    /// tensor archive's tensors, with dtype, shape, coding and bits per value)
    Inspect {
        /// Record archive (written by glyd -r) or tensor archive (written by glyd pack)
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Print columns of a record archive as CSV, JSON lines or Parquet
    Cat {
        /// Record archive (written by glyd -r)
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Columns to print, by name, comma-separated (default: all)
        #[arg(long, value_name = "A,B,...", value_delimiter = ',')]
        columns: Vec<String>,
        /// Table to print, for an archive of a SQL dump (`glyd inspect` lists them)
        #[arg(long, value_name = "NAME")]
        table: Option<String>,
        /// Output format
        #[arg(long, value_enum, default_value = "csv")]
        format: CatFormat,
    },
    /// Run a SQL query over record archives, reading only the columns and row groups it needs
    ///
    /// Each FILE is a table named after its file name up to the first dot, lowercased
    /// (`logs.csv.glyd` is `logs`); an archive of a SQL dump gives each of its tables under
    /// its own name (`public.payment` is `payment`). Names in queries are lowercased unless
    /// double-quoted: write "Level" for a column named Level.
    ///
    /// With no query (the first argument is a file), glyd sql opens a shell on a terminal
    /// (statements end with ';', \d lists tables, \q quits) or, in a pipe, runs the
    /// statements read from standard input.
    ///
    /// Log functions: log_template(text) (the line with each variable as <*>), log_var(text,
    /// n), log_time(text [, year]) (the first timestamp in the line) and the table function
    /// glyd_templates('file.glyd' [, 'column']) (templates with line counts).
    ///
    /// Results stream as they are computed: CSV in a pipe, an aligned table of the first
    /// --max-rows rows on a terminal.
    ///
    /// The query runs with your rights: CREATE EXTERNAL TABLE ... LOCATION reads any file you
    /// can read, COPY (...) TO 'path' writes one, and glyd_templates opens any archive.
    /// --read-only turns all of that off (the setting glyd's library uses for SQL from
    /// others): only the tables given can be queried.
    Sql {
        /// The query, e.g. "SELECT \"Level\", count(*) FROM logs GROUP BY 1"
        #[arg(value_name = "QUERY")]
        query: Option<String>,
        /// Record archives (written by glyd -r), or folders of archives alike
        #[arg(value_name = "FILE")]
        files: Vec<PathBuf>,
        /// A table under a name of your choice (repeatable)
        #[arg(short = 't', long = "table", value_name = "NAME=FILE")]
        tables: Vec<String>,
        /// Output format (default: table on a terminal, csv otherwise)
        #[arg(long, value_enum)]
        format: Option<SqlFormat>,
        /// Rows an aligned table shows; the rest are counted
        #[arg(long, value_name = "N", default_value_t = 1000)]
        max_rows: usize,
        /// Only query the tables given: no DDL or DML (CREATE, COPY, INSERT, SET), no files
        /// named in queries
        #[arg(long)]
        read_only: bool,
        /// Run the query on a Ballista cluster (`df://HOST:PORT`, its scheduler; see glyd
        /// cluster): each FILE is a lake (an object-store URL, or a folder every executor
        /// sees) read there
        #[arg(long, value_name = "URL")]
        cluster: Option<String>,
    },
    /// Run a process of a Ballista cluster that queries lakes of archives (glyd sql --cluster)
    ///
    /// One scheduler plans queries; executors (any number, on any machines that reach the
    /// scheduler and the lake's store) read the archives by ranges and run them. Object
    /// stores are configured from each process's environment (AWS_ENDPOINT_URL, ...).
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// Receive events and land them as queryable record archives in a lake (a service)
    ///
    /// Fluent forward protocol (Fluent Bit and Fluentd `forward` outputs, Fluent loggers):
    /// Message, Forward, PackedForward and gzip CompressedPackedForward modes, acks with
    /// require_ack_response, the shared-key handshake; the tag is the stream.
    ///
    /// HTTP: POST /<stream> with JSON lines or a JSON array (plain, gzip or zstd), or the
    /// Elasticsearch _bulk API (POST /_bulk, POST /<index>/_bulk: the index is the stream),
    /// so shippers' Elasticsearch outputs write here unchanged. A request is answered 200
    /// (and a Fluent chunk acknowledged) only once its events are in the write-ahead log and
    /// synced; archives are written
    /// from the log to OUT/<stream>/dt=YYYY-MM-DD/hour=HH/ when a log segment reaches
    /// --roll-size or --roll-age, and on SIGTERM or SIGINT (which stop the sink cleanly).
    /// GET /metrics (Prometheus) and GET /health are served on every HTTP address.
    ///
    /// Kafka (--kafka BROKERS --topic T --group G): a consumer-group member; each assigned
    /// partition becomes archives OUT/<topic>/partition=<p>/<topic>+<p>+<first offset>.glyd,
    /// every offset in exactly one, committed once its archive is durable. Rows: offset,
    /// timestamp, key, headers (JSON text) and the value (--value json: its keys as columns).
    ///
    /// Each event is a row: `time` (the Fluent event time; over HTTP the event's @timestamp,
    /// time or timestamp key, else when it arrived), then its keys as columns (a nested object with stable
    /// keys as a column per key, `http.status`; other nested values as JSON text).
    Sink(Box<SinkArgs>),
}

/// `glyd cluster`'s processes.
#[derive(clap::Subcommand, Debug)]
pub enum ClusterCommand {
    /// The scheduler: clients (glyd sql --cluster df://HOST:PORT) and executors connect here
    Scheduler {
        /// Address to listen on
        #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50050")]
        bind: std::net::SocketAddr,
    },
    /// An executor: registers with the scheduler and runs the tasks it is given
    Executor {
        /// The scheduler's address
        #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50050")]
        scheduler: String,
        /// Host to bind (and to be reached at)
        #[arg(long, value_name = "HOST", default_value = "127.0.0.1")]
        bind: String,
        /// Port serving query results and shuffle data (Arrow Flight)
        #[arg(long, value_name = "PORT", default_value_t = 50051)]
        flight_port: u16,
        /// Port for the scheduler's calls (gRPC)
        #[arg(long, value_name = "PORT", default_value_t = 50052)]
        grpc_port: u16,
        /// Folder for shuffle files (default: a temporary one)
        #[arg(long, value_name = "DIR")]
        work_dir: Option<PathBuf>,
        /// Tasks run at once (default: one per core)
        #[arg(long, value_name = "N", default_value_t = 0)]
        tasks: usize,
    },
}

/// `glyd sink`'s settings, from flags (and `--config`).
#[derive(clap::Args, Debug, Default)]
pub struct SinkArgs {
    /// A TOML file of these settings (keys named as the flags, with `_` for `-`; routes
    /// as a table `[fluent_route]` of PREFIX = "STREAM"); flags override it
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to serve HTTP on, e.g. 127.0.0.1:8080 (repeatable)
    #[arg(long, value_name = "ADDR")]
    pub http: Vec<String>,
    /// Address to serve the Fluent forward protocol on, e.g. 127.0.0.1:24224 (repeatable)
    #[arg(long, value_name = "ADDR")]
    pub fluent: Vec<String>,
    /// Fluent clients must pass the handshake with this shared key (also from
    /// GLYD_FLUENT_SHARED_KEY)
    #[arg(
        long,
        value_name = "KEY",
        env = "GLYD_FLUENT_SHARED_KEY",
        hide_env_values = true
    )]
    pub fluent_shared_key: Option<String>,
    /// Events of Fluent tags starting with PREFIX go to STREAM (repeatable; first match
    /// wins; other tags are their own stream)
    #[arg(long, value_name = "PREFIX=STREAM")]
    pub fluent_route: Vec<String>,
    /// The lake: archives go to OUT/<stream>/dt=.../hour=.../ (OUT a folder, or a prefix on
    /// an object store such as s3://bucket/lake/, which then needs --wal DIR)
    #[arg(long, value_name = "OUT")]
    pub out: Option<PathBuf>,
    /// Folder of the write-ahead logs (default: OUT/.glyd-sink/wal)
    #[arg(long, value_name = "DIR")]
    pub wal: Option<PathBuf>,
    /// Seal a stream's log into archives at this much input, e.g. 128M (default 128M)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub roll_size: Option<usize>,
    /// ... or this many seconds after its first event (default 60)
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub roll_age: Option<u64>,
    /// Largest event, e.g. 1M (default 1M)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_record_size: Option<usize>,
    /// Largest request body or Fluent message, before and after decompression (default 64M)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_body: Option<usize>,
    /// Streams at most (default 256); a write to one more is refused
    #[arg(long, value_name = "N")]
    pub max_streams: Option<usize>,
    /// Open connections at most, per listener (default 1024)
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Seconds a client may take to send a request or message it started (default 30)
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub read_timeout: Option<u64>,
    /// Kafka brokers to consume from, e.g. 127.0.0.1:9092 (with --topic)
    #[arg(long, value_name = "BROKERS")]
    pub kafka: Option<String>,
    /// A topic to archive (repeatable)
    #[arg(long, value_name = "TOPIC")]
    pub topic: Vec<String>,
    /// The Kafka consumer group (default glyd-sink)
    #[arg(long, value_name = "GROUP")]
    pub group: Option<String>,
    /// Kafka values as json (objects: keys become columns; the default), lines (text) or
    /// raw (bytes, base64); a value not as said is kept whole in `_raw`, flagged in `_invalid`
    #[arg(long, value_name = "FORMAT")]
    pub value: Option<String>,
    /// A Kafka archive never spans two runs of this many offsets (default 1000000); it also
    /// ends at --roll-size of rows
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub roll_records: Option<u64>,
    /// A librdkafka property for the consumer, as kcat's -X (repeatable), e.g.
    /// -X security.protocol=SSL
    #[arg(short = 'X', long = "kafka-option", value_name = "KEY=VALUE")]
    pub kafka_option: Vec<String>,
}

impl Args {
    /// Parses the process arguments.
    pub fn from_env() -> Self {
        Args::parse_from(rewrite_numeric_levels(std::env::args_os()))
    }

    /// The decode memory limit in bytes.
    pub fn memory(&self) -> u64 {
        self.memory.unwrap_or(glyd_core::DEFAULT_MEMORY_LIMIT)
    }

    /// The level the flags ask for.
    pub fn level(&self) -> Level {
        if self.fast {
            Level::Fast
        } else if self.lz {
            Level::Lz
        } else if self.max {
            Level::Max
        } else if self.ultra {
            Level::Ultra
        } else {
            self.level
                .and_then(Level::from_number)
                .unwrap_or(Level::DEFAULT)
        }
    }

    pub fn quiet(&self) -> bool {
        self.quiet > 0
    }
}

/// Turns `-N` (N all digits) into `--level N`, before `--` only.
pub fn rewrite_numeric_levels(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut literal = false;
    for a in args {
        if !literal {
            if a == "--" {
                literal = true;
            } else if let Some(n) = a.to_str().and_then(|s| s.strip_prefix('-')) {
                if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
                    out.push("--level".into());
                    out.push(n.into());
                    continue;
                }
            }
        }
        out.push(a);
    }
    out
}

/// Parses sizes like `4096`, `256K`, `4M`, `1G` (binary units).
/// A `--memory` size: 1M or more.
fn parse_memory(s: &str) -> Result<u64, String> {
    let n = parse_size(s)? as u64;
    if n < 1 << 20 {
        return Err(format!("--memory {s} is too small: give at least 1M"));
    }
    Ok(n)
}

pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        None => (t, 1usize),
        Some((i, _)) => {
            let unit = t[i..].to_ascii_uppercase();
            let mult = match unit.trim_end_matches("IB").trim_end_matches('B') {
                "" => 1,
                "K" => 1 << 10,
                "M" => 1 << 20,
                "G" => 1 << 30,
                _ => return Err(format!("unknown size unit in {s:?}; use K, M or G")),
            };
            (&t[..i], mult)
        }
    };
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("invalid size {s:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_levels_become_level_flags() {
        let v: Vec<OsString> = ["glyd", "-19", "-c", "x", "--", "-3"]
            .iter()
            .map(OsString::from)
            .collect();
        let r = rewrite_numeric_levels(v);
        assert_eq!(r, ["glyd", "--level", "19", "-c", "x", "--", "-3"]);
        let a = Args::parse_from(rewrite_numeric_levels(
            ["glyd", "-1", "f"].iter().map(OsString::from),
        ));
        assert_eq!(a.level(), Level::Fast);
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("256K"), Ok(256 << 10));
        assert_eq!(parse_size("4MiB"), Ok(4 << 20));
        assert!(parse_size("4X").is_err());
    }

    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        Args::command().debug_assert();
    }
}
