//! One loaded dataset: both run tables and the DataFusion context they are registered in.

use datafusion::prelude::SessionContext;

use super::domain::Domain;
use super::table::RunTable;

/// The two run tables of one loaded dataset, plus the DataFusion context they are registered in.
pub struct Dataset {
    pub llm: RunTable,
    pub diffusion: RunTable,
    /// Tables `llm_runs` and `diffusion_runs` (normalised, in default order), which SQL queries
    /// read (`engine::sql`).
    pub ctx: SessionContext,
}

impl Dataset {
    pub fn table(&self, domain: Domain) -> &RunTable {
        match domain {
            Domain::Llm => &self.llm,
            Domain::Diffusion => &self.diffusion,
        }
    }
}
