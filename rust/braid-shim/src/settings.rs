//! What the shim reads of braid's configuration on stdin (`braid_wire::settings`, shared with
//! the `braid` front), and stdin read whole.

use std::io::Read;

use braid_cni::{codes, CniError};
pub use braid_wire::settings::{parse, Settings};
use braid_wire::settings::{stdin_too_large, MAX_STDIN_BYTES};

/// Reads stdin whole, refusing more than [`MAX_STDIN_BYTES`] (code 6).
pub fn read_stdin(mut input: impl Read) -> Result<Vec<u8>, CniError> {
    let mut data = Vec::new();
    let limit = u64::try_from(MAX_STDIN_BYTES).unwrap_or(u64::MAX) + 1;
    input
        .by_ref()
        .take(limit)
        .read_to_end(&mut data)
        .map_err(|err| CniError::new(codes::IO_FAILURE, format!("cannot read stdin: {err}")))?;
    if data.len() > MAX_STDIN_BYTES {
        return Err(stdin_too_large());
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_over_the_limit_is_code_6() {
        let data = vec![b' '; MAX_STDIN_BYTES + 1];
        assert_eq!(
            read_stdin(&data[..]).unwrap_err().code,
            codes::DECODE_FAILURE
        );
        assert_eq!(read_stdin(&data[1..]).unwrap().len(), MAX_STDIN_BYTES);
    }
}
