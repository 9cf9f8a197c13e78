//! `wasmco dev`: the API, the built-in controllers and three virtual
//! clusters in one process, with controllers hot-reloaded from a directory.

mod clusters;
mod console;
mod example;
mod hot_reload;
mod options;
mod server;

pub use clusters::DEV_PROVIDER;
pub use console::Console;
pub use example::find_example;
pub use options::DevOptions;
pub use server::run;
