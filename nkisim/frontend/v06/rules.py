"""Every refusal the NKI 0.6 front end makes, with its source: the table ``docs/nki06-refusals.md`` is rendered from.

A refusal is a ``raise`` in ``nkisim/frontend/v06`` (or an error built there and raised later); each carries a
``# rule: <key>`` comment on the line above it naming one ``Rule`` here, and ``tests/test_nki06_rules.py`` fails when
one does not, or names a key this table lacks.  A rule says what kind of refusal it is:

- ``documented``: AWS's docs state the rule; ``source`` quotes the line (checked against a clone of AWS's docs
  source by the test, where one is on the machine).
- ``version``: a feature an NKI release dropped; the message says "NKI 0.N dropped ..." and what replaces it, and
  ``bench/conformance.py`` counts these failures apart.
- ``warning``: a documented rule that AWS-validated code breaks: the code runs and a ``DocumentedRuleWarning``
  quotes the doc (no refusal left).
- ``limit``: something the simulator cannot do yet (``NotImplementedError`` and kin): a statement about nkisim,
  never about the compiler.
- ``python``: Python's own rule (a wrong kind of argument, a name that does not exist, iterating a tensor), which no
  NKI doc needs to state.

``evidence`` says what AWS-validated code was checked against the rule (nki-library's release branches and main,
the docs source's ``nki/examples``) and what it does, or why it was narrowed.
"""

from __future__ import annotations

from dataclasses import dataclass

#: the documents a source names, as paths inside AWS's docs source (github.com/aws-neuron/aws-neuron-sdk)
LANG = "nki/api/nki/language/__init__.py"
ISA = "nki/api/nki/isa/__init__.py"
NKI = "nki/api/nki/__init__.py"
MIGRATION = "nki/migration/index.rst"
GUIDE = "nki/get-started/nki-language-guide.rst"
NOTES = "release-notes/components/nki.rst"
SCHEDULING = "nki/guides/how-to-scheduling-apis.rst"
DGE = "nki/deep-dives/nki-dge.rst"

#: evidence, the usual cases
CHECKED = ("nki-library 2.29_release and main (their integration tests through bench/conformance.py --nkilib) and "
           "the docs source's nki/examples (--aws-examples): no validated kernel found refused by it")
OURS = "not a claim about the compiler"


@dataclass(frozen=True)
class Source:
    """A line of one of AWS's documents and the words on it that state the rule."""

    path: str
    line: int
    quote: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} \u201c{self.quote}\u201d"


@dataclass(frozen=True)
class Rule:
    key: str
    kind: str  # documented | version | warning | limit | python
    raises: str  # the exception as the kernel's author sees it
    condition: str
    source: Source | None = None
    evidence: str = CHECKED
    #: version rules: the release that dropped the feature, and what replaces it
    dropped_in: str = ""
    replacement: str = ""


KINDS = ("documented", "version", "warning", "limit", "python")


def _doc(key: str, raises: str, condition: str, path: str, line: int, quote: str, evidence: str = CHECKED) -> Rule:
    return Rule(key, "documented", raises, condition, Source(path, line, quote), evidence)


def _version(key: str, raises: str, condition: str, path: str, line: int, quote: str, dropped_in: str,
             replacement: str, evidence: str = CHECKED) -> Rule:
    return Rule(key, "version", raises, condition, Source(path, line, quote), evidence, dropped_in, replacement)


def _limit(key: str, raises: str, condition: str, evidence: str = OURS) -> Rule:
    return Rule(key, "limit", raises, condition, None, evidence)


def _python(key: str, raises: str, condition: str) -> Rule:
    return Rule(key, "python", raises, condition, None, OURS)


RULES: tuple[Rule, ...] = (
    # --- version differences: what an NKI release dropped ---------------------------------------------------------
    _version("enum.raw_integer", "TypeError", "a raw integer or string where an nki.isa enum member is expected "
             "(except dge_mode=0 and 3, see the warning below)", MIGRATION, 625,
             "Raw integer values (e.g., ``dge_mode=2``) are no longer accepted for enum parameters", "NKI 0.3",
             "the enum member (nisa.dge_mode.hwdge)"),
    _version("buffer.string", "TypeError", "a string as a buffer ('sbuf')", MIGRATION, 640,
             "no longer accept strings for the ``buffer``", "NKI 0.3", "nl.sbuf, nl.psum, nl.hbm, nl.shared_hbm"),
    _version("jit.platform_target", "ValueError", "nki.jit(platform_target=...)", MIGRATION, 395,
             "Passing ``platform_target`` to ``@nki.jit`` raises an error in NKI 0.3.0", "NKI 0.3",
             "NEURON_PLATFORM_TARGET_OVERRIDE"),
    _version("kernel.keyword_only", "TypeError", "a '*' separator or **kwargs in a kernel's signature", MIGRATION,
             686, "does not support the ``*`` separator in kernel function signatures", "NKI 0.3",
             "plain positional-or-keyword parameters"),
    _version("kernel.list_argument", "TypeError", "a list as a kernel argument", MIGRATION, 721,
             "does not support ``list`` as a kernel argument type", "NKI 0.3", "a tuple"),
    _version("dma_copy.psum_source", "TypeError", "nisa.dma_copy reading PSUM", MIGRATION, 422,
             "``nisa.dma_copy`` no longer supports reading directly from PSUM", "NKI 0.3",
             "copy to SBUF first (nisa.tensor_copy)"),
    _version("dma_copy.hwdge_cast", "TypeError", "dma_copy(dge_mode=hwdge) between different dtypes", MIGRATION, 443,
             "no type casting occurs", "NKI 0.3", ".view() to match dtypes, or dge_mode swdge / none"),
    _version("memset.float_on_integer", "TypeError", "memset of a float other than 0.0 into an integer dst",
             MIGRATION, 500, "NKI 0.3.0 enforces that the ``value`` argument must match the destination tensor's "
             "dtype", "NKI 0.3", "an int literal",
             "narrowed: nki-library's 2.29_release kernels (validated on the 0.3 compiler) write memset(value=0.0) "
             "on uint32 tiles, so 0.0 is accepted; the guide's refused example, value=2.0 on int32, stays refused"),
    _version("reduce.trailing_axes", "ValueError", "tensor_reduce / nl reductions over axes that are not the trailing "
             "free dimensions of the tile's actual rank", MIGRATION, 518,
             "``axis=1`` to refer to the last free dimension even for 3D/4D tensors", "NKI 0.3",
             "the trailing axes of the actual rank (axis=[1, 2] on a 3-D tile)"),
    _version("rsqrt.psum_input", "TypeError", "nl.rsqrt of a PSUM tile", MIGRATION, 163,
             "no longer accepts PSUM inputs", "NKI 0.5", "copy to SBUF first, or nisa.activation(op=nl.rsqrt)"),
    _version("isa.removed", "AttributeError", "nisa.tensor_copy_dynamic_src / _dst and other removed instructions",
             MIGRATION, 234, "``nki.isa.tensor_copy_dynamic_src`` / ``nki.isa.tensor_copy_dynamic_dst`` — removed", "NKI 0.4",
             "the instruction named in the message"),
    _version("nki.legacy_entry_point", "AttributeError", "nki.benchmark / profile / baremetal / simulate_kernel",
             NOTES, 743, "``nki.benchmark`` and ``nki.profile`` are not available with NKI 0.2.0", "NKI 0.2",
             "nki.simulate, or nkisim's latency and profile"),
    # --- documented rules ------------------------------------------------------------------------------------------
    _doc("dma_copy.engine", "ValueError", "dma_copy(engine=...) other than sync/scalar, or without dge_mode=hwdge",
         ISA, 381, "Only valid when ``dge_mode=nisa.dge_mode.hwdge``"),
    _doc("dma_copy.dge_mode_indirect", "ValueError", "dma_copy with dge_mode hwdge or none through a per-partition "
         "(vector_offset) view", DGE, 78, "the only mode that supports indirect (gather/scatter) operations with "
         "dynamic"),
    _doc("dma_copy.dge_mode_dynamic", "ValueError", "dma_copy with dge_mode=none at a dynamic start (a register or "
         "tile offset)", DGE, 67, "Cannot handle dynamic (runtime-computed) addresses or indices"),
    _doc("device_print.prefix", "TypeError", "nl.device_print with a prefix that is not a constant string", LANG,
         2671, "must be a constant string"),
    _doc("operator.tile_operand", "TypeError", "an nl binary operator with no tile operand", LANG, 1022,
         "At least one of x, y must be a tile"),
    _doc("dma.oob_skip_static", "ValueError", "oob_mode=skip on a dma_transpose without an indirect source", ISA,
         376, "Silently skips any operations involving out-of-bounds indices"),
    _doc("transpose.dtype", "TypeError", "nc_transpose / dma_transpose whose dst dtype differs from its source",
         ISA, 2145, "The output data type ``dst.dtype`` must match the input data type ``data.dtype``"),
    _doc("nc_matmul.fp8_mix", "TypeError", "nc_matmul mixing float8_e4m3 with float8_e4m3fn", ISA, 579,
         "cannot be mixed in the same matmul"),
    _doc("activation.bias_shape", "ValueError", "an activation bias whose free size is not 1", NOTES, 629,
         "Fixed bias shape checking in :doc:`nki.isa.activation"),
    _doc("kernel.no_arguments", "ValueError", "a kernel launched with no arguments", NOTES, 661,
         "calling an ``nki.jit`` kernel with no"),
    _doc("kernel.dtype_argument", "TypeError", "a dtype kernel argument with no NKI equivalent", NOTES, 246,
         "JAX scalar dtype types"),
    _doc("reshape.element_count", "ValueError", "a reshape that changes the element count", MIGRATION, 169,
         "``reshape`` now asserts that the total element count is preserved"),
    _doc("ndarray.address", "TypeError", "nl.ndarray(address=...) outside SBUF/PSUM, malformed, or at a partition "
         "its size cannot start at", LANG, 2552, "optional memory address ``(partition_offset, free_offset)``"),
    _doc("ndarray.psum_bank", "TypeError", "a PSUM address not at the start of a bank", MIGRATION, 1108,
         "The address space for PSUM is now also 2D"),
    _doc("random_seed.shape", "TypeError", "nl.random_seed with a seed that is not a [1, 1] SBUF/PSUM tensor", LANG,
         2126, "a [1,1] tensor on SBUF or PSUM with a 32-bit seed value"),
    _doc("sendrecv.ranks", "TypeError", "sendrecv ranks other than the other core of an LNC2 launch", ISA, 2991,
         "``send_to_rank`` and ``recv_from_rank`` must be either 0 or 1"),
    _doc("sendrecv.gpsimd_bytes", "TypeError", "sendrecv over gpsimd_dma moving more bytes per partition than its cap",
         ISA, 3005, "1024 bytes for 32-bit types"),
    _doc("core_barrier.cores", "TypeError", "core_barrier(cores=...) other than (0, 1) or core 0 alone (narrowed: "
         "see core_barrier.one_core)", ISA, 2620, "Currently only ``cores=(0, 1)`` is supported",
         "nki-library 2.29_release writes cores=(0, 1), [0, 1], and core 0 alone (0, (0,)) for one shard; no "
         "validated kernel names another core set"),
    _doc("target.generation", "ValueError", "an instruction or operator the target's NeuronCore generation lacks",
         ISA, 371, "(NeuronCore-v4+ only)"),
    _doc("control.nested_loop_register", "RuntimeError", "a nested nl.dynamic_range writing a loop-carried register",
         NOTES, 313, "fail to compile with a \"Could not find register\" error"),
    _doc("control.induction_read_only", "AssertionError", "writing a dynamic loop's induction register", NOTES, 300,
         "Such writes now raise ``AssertionError`` at trace time"),
    _doc("control.register_python_value", "TypeError", "a VirtualRegister in a Python if / while / int() / range()",
         ISA, 191, "using a register in Python control flow"),
    _doc("control.dynamic_step", "AssertionError", "a dynamic loop whose step is not a positive compile-time int",
         LANG, 2415, "step size, must be a compile-time positive integer (not VirtualRegister)"),
    _doc("control.no_reorder_dynamic_loop", "ValueError", "a dynamic loop inside nl.no_reorder()", LANG, 2252,
         "not supported inside a ``no_reorder`` block"),
    _doc("schedule.dynamic_loop_edge", "ValueError", "a depends_on / with_schedule edge crossing a dynamic loop's "
         "boundary", ISA, 160, "You cannot wire an edge into or out of"),
    _doc("schedule.unknown_name", "ValueError", "with_schedule naming an instruction no instruction is named", SCHEDULING,
         59, "check that it makes sense"),
    _doc("view.partition_dim", "ValueError", "a view method changing dim 0 of an on-chip tensor (permute, broadcast, "
         "reshape_dim, reshape, select of a dynamic index)", LANG, 128,
         "Most view operations cannot modify this"),
    _doc("view.contiguity", "ValueError", "flatten_dims / reshape / view across dimensions that are not contiguous in "
         "memory", LANG, 338, "must be contiguous in memory"),
    _doc("view.one_dynamic_select", "ValueError", "a second dynamic select (select, vector_select, scalar_offset) "
         "on one view, or slicing the dimension of an indirect view", LANG, 443,
         "only one dynamic select per tensor"),
    _doc("view.indirect_final", "ValueError", "slicing, selecting or moving the indirect dimension of an indirect "
         "view; an indirect view as offsets", LANG, 192, "Indirect views cannot be re-indirected"),
    _doc("view.vector_select_hbm", "ValueError", "vector_select / vector_offset on an on-chip tensor, or on a "
         "dimension other than 0", LANG, 473, "Only supported on HBM tensors"),
    _doc("view.vector_offset_shape", "ValueError", "per-partition offsets that are not an SBUF integer tensor with "
         "one offset per partition", LANG, 482, "SBUF tensor with per-partition indices, shape "
         "``(num_partitions, 1)``",
         "narrowed: nki-library's kernels pass [P, 1, 1] offsets tiles, so any (P, 1, ..., 1) shape is taken"),
    _doc("view.scalar_offset_shape", "ValueError", "a scalar offset that is neither a register nor a (1, 1) SBUF "
         "tensor", LANG, 508, "dynamic scalar index tensor for indirect access"),
    _doc("view.ap_pattern", "ValueError", ".ap() preconditions: "
         "indirect_dim in range, vector_offset with indirect_dim=0 and counting its partitions, one dynamic "
         "offset", LANG, 510, "dimension in ``self.shape`` whose stride scales"),
    _doc("view.reinterpret", "ValueError", "view(dtype) of a non-contiguous last dimension, after a dynamic select, "
         "or at an offset that is not a whole number of the new elements", LANG, 538,
         "The last dimension must be contiguous in memory"),
    _doc("view.method_arguments", "ValueError", "a view method's own preconditions: permute's permutation, "
         "broadcast / squeeze_dim of a size other than 1, flatten_dims' order, rearrange's names, broadcast_to's "
         "shape", LANG, 236, "``dims[0]`` must be 0"),
    _doc("view.bounds", "IndexError", "an index, slice, select or access pattern outside the tensor", LANG, 442,
         "``0 <= index < t.shape[dim]``"),
    # --- narrowed into warnings: AWS-validated code breaks the doc ------------------------------------------------
    Rule("kernel.identity_operator", "warning", "DocumentedRuleWarning",
         "'is' / 'is not' in a kernel (runs; warned once per kernel)",
         Source(MIGRATION, 704, "The NKI 0.3.0 compiler does not support Python's ``is`` / ``is not`` operators"),
         "nki-library 2.29_release (validated on NKI 0.3.0) tests `x is None` / `is not None` on 428 lines and "
         "`tp_out is True` (attention_cte.py:245); identity against trace-time Python values is evaluated while "
         "tracing"),
    Rule("enum.raw_dge_mode", "warning", "DocumentedRuleWarning", "dge_mode=0 or 3 as a raw integer (runs as "
         "dge_mode.unknown / none; warned once per line)",
         Source(MIGRATION, 625, "Raw integer values (e.g., ``dge_mode=2``) are no longer accepted"),
         "nki-library 2.29_release and main pass _DGE_MODE_NONE = 3 and _DGE_MODE_UNKNOWN = 0 to dma_copy "
         "(mlp_tkg, qkv_tkg, norm_tkg_utils)"),
    Rule("kernel.trace_sub_kernel", "warning", "DocumentedRuleWarning", "an @nki.jit(mode='trace') kernel called "
         "from inside another kernel (runs inline; warned once per sub-kernel)",
         Source(MIGRATION, 1159, "This decorator needs to be removed for the new NKI Compiler"),
         "nki-library 2.29_release (validated on NKI 0.3.0) decorates its blockwise-matmul sub-kernels "
         "@nki.jit(mode=\"trace\") and calls them from moe_cte (core/moe/moe_cte/bwmm_shard_on_I.py:86, "
         "moe_cte.py:380); a sub-kernel decorated plainly: kernel.sub_kernel"),
    Rule("kernel.sub_kernel", "warning", "DocumentedRuleWarning", "an @nki.jit kernel called from inside another "
         "kernel (runs inline; warned once per sub-kernel)",
         Source(MIGRATION, 1156, "the ``nki.jit`` decorator will need to be removed from sub-kernels"),
         "nki-library 2.29_release (validated on NKI 0.3.0) calls its @nki.jit attention_block_tkg "
         "(experimental/transformer/attention_block_tkg.py:82) from inside kernels: transformer_tkg "
         "(experimental/transformer/transformer_tkg.py:231, jit'd at its call site) and its test's "
         "nki.jit(attention_block_tkg_kernel_test_wrapper) (test_attention_block_tkg.py:840, 1155)"),
    Rule("core_barrier.one_core", "warning", "DocumentedRuleWarning", "core_barrier(cores=0 / (0,) / [0]): a "
         "barrier of core 0 alone (runs as the core's own semaphore write and wait; warned once per line)",
         Source(ISA, 2620, "Currently only ``cores=(0, 1)`` is supported"),
         "nki-library 2.29_release (validated on NKI 0.3.0) writes nisa.core_barrier(output, (0)) for NUM_SHARDS == 1 "
         "(core/moe/moe_cte/bwmm_shard_on_I.py:311, 2144-2147) and main nisa.core_barrier(output, (0,)) "
         "(experimental/moe/forward/bwmm_shard_on_H.py:705)"),
    Rule("core_barrier.on_chip_data", "warning", "DocumentedRuleWarning", "core_barrier(data=...) of an on-chip "
         "tile (runs as the barrier's semaphore write and wait, after the tile's last write; warned once per line); "
         "HBM data other than shared_hbm stays refused",
         Source(ISA, 2624, "This must be data in shared HBM that multiple cores are accessing"),
         "nki-library 2.29_release (validated on NKI 0.3.0) writes nisa.core_barrier(block_idx, (0, 1)) of an SBUF "
         "[1, 1] block counter (core/moe/moe_cte/bwmm_shard_on_I.py:571-577) and main "
         "nisa.core_barrier(block_idx_sbuf, (0, 1)) (core/moe/moe_cte/bwmm_shard_on_I_mx.py:756)"),
    Rule("enum.nc_version_order", "warning", "(none: ordered)", "nisa.nc_version members compare with < <= > >= "
         "(no warning: the order is the generation number)",
         Source(GUIDE, 661, "No other binary operators on enum values are supported"),
         "nki-library 2.29_release writes nisa.get_nc_version() >= nisa.nc_version.gen3 (moe_cte_utils.py:201, "
         "attention_tkg.py:2332) and <= gen2; other enums keep == / != only"),
    # --- the simulator's limits --------------------------------------------------------------------------------------
    _limit("limit.indirect_pattern", "NotImplementedError", "an indirect view whose row stride is 0 or negative, "
           "offsets whose partition stride is not a whole number of partitions, or a tile offset on an on-chip view "
           "whose first pair is not its partitions"),
    _limit("limit.dynamic_offset_pattern", "NotImplementedError", "a register offset on an on-chip view whose first "
           "pair is not its partitions"),
    _limit("limit.slice_step", "ValueError", "a slice with a step below 1",
           "AWS's __getitem__ docs show forward steps (sb[:, 0:32:2]) and say nothing of backward ones"),
    _limit("limit.partition_step", "ValueError", ".ap() over an on-chip tensor whose first pair strides more than "
           "one partition (or by 0 or less): the first pair counts partitions; a stride below the row is one "
           "partition", "narrowed from a refusal of every stride but the row's, which AWS's docs do not state: "
           "nki-library 2.29_release's TensorView re-patterns a view of part of a row with the view's own free size "
           "(mlp_tkg_gate_up_projection.py:243)"),
    _limit("limit.tensor_indirection", "NotImplementedError", ".indirect (NeuronCore-v4 tensor indirection)"),
    _limit("limit.returned_part", "NotImplementedError", "a kernel returning part of a tensor (a whole tensor or a "
           "reshape of it is fine)", "replaces the unsourced rule 'return the tensor itself': nki-library's kernels "
           "return out.reshape(shape)"),
    _limit("limit.refused_api", "NotImplementedError", "an nki.isa / nki.collectives call the simulator does not "
           "model (collectives across devices)"),
    _limit("limit.gather_axis", "NotImplementedError", "nl.gather_flattened off axis 0",
           "AWS's docs define the gather only along the flattened free dimension (language:2289 'to select from the "
           "free dimension of data'; SDK 2.26's docstring: 'all free dimensions are flattened and indexed as the same "
           "row'; nc_n_gather, which replaced it, takes no axis): what another axis does is not documented, and no "
           "validated kernel passes one"),
    _limit("limit.values_unknown", "TypeError", "a register holding a tensor's value used while tracing without "
           "values (cost-only tracing)"),
    _limit("limit.program_order", "ValueError", "a scheduling edge whose producer is issued after its consumer, when "
           "the consumer cannot be issued again after it (an instruction between them, or the producer, touches what "
           "the consumer touches, waits for it or has state no operand shows; a dynamic loop's boundary between "
           "them), or an instruction depending on itself: the simulator runs instructions in the order they are "
           "issued"),
    _limit("limit.edges", "ValueError", "an instruction waiting for more named instructions than a program holds"),
    _limit("limit.while_iterations", "RuntimeError", "nl.while_loop running past the simulator's iteration cap"),
    _limit("limit.no_storage", "TypeError", "NkiTensor(...) constructed directly (storage comes from nl.ndarray)"),
    _limit("limit.nc_version_variable", "ValueError", "NKI_NC_VERSION naming no generation (nki.cpu_simulate)"),
    # --- Python's own rules ----------------------------------------------------------------------------------------
    _python("python.argument_type", "TypeError", "an argument of the wrong Python type (a tensor, number, operator, "
            "dtype, buffer, register, function, name or index where another kind is required)"),
    _python("python.tensor_value", "TypeError", "iterating an NkiTensor (its values exist on the device only)"),
    _python("python.no_attribute", "AttributeError", "a name the nki module does not define"),
    _python("python.index", "IndexError", "too many indices, or program_id of an axis the launch lacks"),
    _python("python.internal", "AssertionError", "an invariant of the simulator itself (a bug if ever raised)"),
)

BY_KEY: dict[str, Rule] = {r.key: r for r in RULES}


# --- the table, generated from the code ------------------------------------------------------------------------------
_RULE_COMMENT = "# rule: "


@dataclass(frozen=True)
class Site:
    """A ``raise`` (or a warning) of the 0.6 front end and the rule its ``# rule:`` comment names ("" if none)."""

    path: str  # relative to the nkisim package's parent
    line: int
    function: str
    key: str


def sites(package: str | None = None) -> list[Site]:
    """Every ``raise`` with an exception under ``nkisim/frontend/v06`` (or the folder ``package``; bare re-raises
    aside) and every ``# rule:`` comment, with the rule each names: the code the table is generated from."""
    import ast
    import pathlib

    here = pathlib.Path(package or __file__).resolve()
    here = here if here.is_dir() else here.parent
    root = here.parents[2]
    found: list[Site] = []
    for path in sorted(here.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.split("\n")
        rel = path.relative_to(root).as_posix()
        owner: dict[int, str] = {}
        tree = ast.parse(text)
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if hasattr(node, "lineno"):
                        owner.setdefault(node.lineno, fn.name)
        commented: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and node.exc is not None:
                above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
                key = above[len(_RULE_COMMENT):].strip() if above.startswith(_RULE_COMMENT) else ""
                commented.add(node.lineno - 1)
                found.append(Site(rel, node.lineno, owner.get(node.lineno, "<module>"), key))
        for i, line in enumerate(lines, start=1):  # rule comments on warnings (no raise below them)
            stripped = line.strip()
            if stripped.startswith(_RULE_COMMENT) and i not in commented:
                found.append(Site(rel, i + 1, owner.get(i + 1, "<module>"), stripped[len(_RULE_COMMENT):].strip()))
    return sorted(found, key=lambda s: (s.path, s.line))


def counts() -> dict[str, int]:
    """Rules per kind; ``sourced``: rules that cite an AWS document."""
    c = {k: sum(r.kind == k for r in RULES) for k in KINDS}
    c["sourced"] = sum(r.source is not None for r in RULES)
    return c


def markdown() -> str:
    """``docs/nki06-refusals.md``: every rule with its source, evidence and the places that raise it."""
    where: dict[str, list[str]] = {}
    for s in sites():
        where.setdefault(s.key, []).append(f"`{s.path.removeprefix('nkisim/frontend/v06/')}` {s.function}")
    c = counts()
    out = [
        "# Every refusal of the NKI 0.6 front end, and its source",
        "",
        "<!-- generated by `python -m nkisim.frontend.v06.rules > docs/nki06-refusals.md`; "
        "tests/test_nki06_rules.py fails when this page, or a rule, is out of date -->",
        "",
        "A simulator that refuses code the Neuron compiler accepts is as wrong as one that accepts what it refuses. "
        "Every `raise` in nkisim's NKI 0.6 front end (`nkisim/frontend/v06/`) names one of the rules below, which "
        "says where AWS states it (a line of AWS's docs source, github.com/aws-neuron/aws-neuron-sdk, quoted) and "
        "what AWS-validated code (nki-library's release branches and main, the docs source's `nki/examples`) was "
        "checked against it. Rules AWS's own validated kernels break were narrowed to what they do not do, or "
        "became warnings quoting the doc. *version* rules are features an NKI release dropped: their message says "
        "which release and what replaces it, and `bench/conformance.py` counts them apart. *limit* rules are what "
        "nkisim cannot simulate yet, never a claim about the compiler; *python* rules are Python's own.",
        "",
        f"**{len(RULES)} rules:** {c['documented']} documented, {c['version']} version differences, "
        f"{c['warning']} narrowed into warnings, {c['limit']} simulator limits, {c['python']} Python's own; "
        f"{c['sourced']} cite an AWS document. Rules removed for want of a source: 'a kernel returns the tensor "
        f"itself, not a view' (now a reshape of the whole output returns; a part of one is a simulator limit), "
        f"'per-partition offsets are exactly (P, 1)' (narrowed), 'a slice is never empty', 'views step forward' "
        f"(a simulator limit), 'an NkiTensor has no truth value' (a tensor is a reference, true while tracing).",
        "",
        "| rule | kind | raises | refused | source | evidence checked | raised in |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in RULES:
        src = "—" if r.source is None else f"`{r.source.path}:{r.source.line}` “{r.source.quote}”"
        if r.kind == "version":
            src += f" (dropped in {r.dropped_in}; use {r.replacement})"
        cells = [f"`{r.key}`", r.kind, f"`{r.raises}`", r.condition, src, r.evidence,
                 "<br>".join(sorted(set(where.get(r.key, [])))) or "—"]
        out.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(markdown())
