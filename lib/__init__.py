"""iclr26-repro: reproduction notebooks for ICLR 2026 papers."""
