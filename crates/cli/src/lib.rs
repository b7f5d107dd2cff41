//! What the two binaries of this package share: the flags that record a
//! live run (`--pcap`, `--events`, the series), the checks of the files
//! they write, the seed's parser, and `pipelabd`'s arguments. `pipelab`
//! and `pipelabd` both link this library, so each flag has one parser.

#![forbid(unsafe_code)]

pub mod capture;
pub mod daemon_args;
pub mod outputs;
pub mod seed;
pub mod series;
