"""Operations: the op table (single source of truth) and the numerics of each op family."""
