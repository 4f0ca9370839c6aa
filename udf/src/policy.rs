//! What a SQL statement may do besides reading the tables it was given. A session that runs
//! SQL written by someone else (a library caller's user, a service's client) must not let it
//! read or write arbitrary files: `CREATE EXTERNAL TABLE ... LOCATION '/etc/...'` reads any
//! file the process can, `COPY (...) TO 'path'` writes one, and `glyd_templates('path')`
//! opens any archive. [`SqlPolicy::default`] allows none of these; [`SqlPolicy::trusted`]
//! allows all of them, for SQL the process's own user types (the `glyd sql` command).

use datafusion::dataframe::DataFrame;
use datafusion::error::Result;
use datafusion::execution::context::SQLOptions;
use datafusion::prelude::SessionContext;

/// What SQL may do besides querying registered tables.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SqlPolicy {
    /// DDL (`CREATE`, `DROP`, `CREATE EXTERNAL TABLE` with its `LOCATION`), DML (`INSERT`,
    /// `COPY ... TO`) and other statements (`SET`, transactions).
    pub statements: bool,
    /// Table functions that open paths named in the query (`glyd_templates('file.glyd')`).
    pub files: bool,
}

impl SqlPolicy {
    /// Everything allowed: for SQL written by the user the process runs as.
    pub fn trusted() -> Self {
        SqlPolicy {
            statements: true,
            files: true,
        }
    }

    /// DataFusion's options for statements under this policy.
    pub fn sql_options(&self) -> SQLOptions {
        SQLOptions::new()
            .with_allow_ddl(self.statements)
            .with_allow_dml(self.statements)
            .with_allow_statements(self.statements)
    }
}

/// Plans `query` in `ctx` under `policy`: a statement the policy does not allow is an error
/// before anything runs. Register the log functions with the same policy
/// ([`crate::register_log_functions`]).
pub async fn sql(ctx: &SessionContext, query: &str, policy: SqlPolicy) -> Result<DataFrame> {
    ctx.sql_with_options(query, policy.sql_options()).await
}
