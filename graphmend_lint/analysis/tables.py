"""Readable tables of torch facts the analysis relies on. Edit here, nowhere else.

Each table says what a torch method or function does to the value it is given:
whether it is a tensor, whether the result is 0-d, and what a fix may assume.
"""
from __future__ import annotations

from dataclasses import dataclass

# -- compile boundaries (read by the scope, the context and the project index) --------------------
COMPILE_FUNCS = {"torch.compile", "torch._dynamo.optimize"}
# `torch.jit.ignore` and `torch.jit.unused` are not among them: they matter to TorchScript only, Dynamo traces
# such functions (measured: a tensor `if` in one breaks the graph).
DISABLE_FUNCS = {"torch.compiler.disable", "torch._dynamo.disable"}
# Decorators that put calls of a function in the graph as they are: Dynamo does not trace its body
# (torchao's float8 casts; a `print` there is no break). Not compiled code, and no break to report.
OPAQUE_FUNCS = {"torch._dynamo.allow_in_graph", "torch.compiler.allow_in_graph"}
# `MyFunction.apply(x)` in compiled code: Dynamo traces the class's `forward` (torch 2.13).
AUTOGRAD_FUNCTION = {"torch.autograd.Function", "torch.autograd.function.Function"}
# Bases from other files that are nn.Modules by convention (transformers' PreTrainedModel family).
MODULE_BASE_SUFFIXES = ("PreTrainedModel",)
# True under torch.compile: `if not <one of these>():` guards eager-only code.
IS_COMPILING = {
    "torch.compiler.is_compiling",
    "torch._dynamo.is_compiling",
    "torch.compiler.is_dynamo_compiling",
    "torch._utils.is_compiling",
    "transformers.utils.is_torchdynamo_compiling",
    "transformers.utils.import_utils.is_torchdynamo_compiling",
}
# Bare names that are compile checks even when imported relatively (transformers' own code).
IS_COMPILING_NAMES = {"is_torchdynamo_compiling", "is_compiling"}
# False under Dynamo: TorchScript-only tests (`if torch.jit.is_scripting():` never runs compiled).
NOT_COMPILING = {"torch.jit.is_scripting", "torch.jit.is_tracing", "torch._C._get_tracing_state"}

# Reductions: without a `dim`/`axis` argument the result is a 0-d tensor.
# Value: result dtype ("same" = input's; "bool"; "int"; "float"; "sum" = int64 for bool/int input).
REDUCTIONS: dict[str, str] = {
    "sum": "sum", "nansum": "sum", "prod": "sum",
    "mean": "float", "nanmean": "float", "std": "float", "var": "float", "norm": "float",
    "max": "same", "min": "same", "amax": "same", "amin": "same", "median": "same",
    "any": "bool", "all": "bool",
    "argmax": "int", "argmin": "int", "count_nonzero": "int",
}
DIM_KEYWORDS = {"dim", "axis", "keepdim"}

# Element-wise predicates: a bool tensor of the input's shape.
PREDICATES = {"isnan", "isinf", "isfinite", "isneginf", "isposinf", "isreal", "signbit",
              "logical_not", "logical_and", "logical_or", "logical_xor",
              "eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "equal_elementwise"}

# Python values computed from tensor data: using them in Python forces a break.
DATA_METHODS = {"item", "tolist", "equal", "allclose", "numpy", "is_nonzero", "__bool__"}
DATA_FUNCS = {"torch.equal", "torch.allclose", "torch.is_nonzero"}
DATA_BUILTINS = {"int", "float", "bool"}

# Static facts: shapes, dtypes, devices and flags known at trace time.
STATIC_ATTRS = {"shape", "dtype", "device", "ndim", "is_cuda", "is_cpu", "is_meta", "requires_grad",
                "layout", "is_sparse", "is_quantized", "names", "is_leaf", "training"}
STATIC_METHODS = {"dim", "size", "numel", "nelement", "stride", "is_contiguous", "is_floating_point",
                  "is_complex", "element_size", "get_device", "ndimension", "type", "storage_offset"}
STATIC_FUNCS = {"torch.is_tensor", "torch.is_floating_point", "torch.is_complex", "torch.numel",
                "torch.finfo", "torch.iinfo", "torch.get_default_dtype", "torch.is_grad_enabled",
                "torch.is_autocast_enabled", "torch.is_inference_mode_enabled", "torch.cuda.is_available",
                "torch.jit.is_scripting", "torch.jit.is_tracing", "torch.compiler.is_compiling",
                "torch._dynamo.is_compiling", "torch.compiler.is_dynamo_compiling", "torch.Size",
                "torch.device", "torch.dtype", "torch.jit.isinstance", "torch._C._get_tracing_state"}
STATIC_BUILTINS = {"len", "isinstance", "issubclass", "hasattr", "callable", "type", "id", "range"}
# Attribute chains rooted at these names are configuration, never tensors.
CONFIG_ROOTS = {"config", "self.config", "cfg", "self.cfg", "args", "self.args"}


@dataclass(frozen=True)
class Op:
    """What an element-wise op guarantees about `op(x, <python scalars>)`.

    shape: result has x's shape (given only Python-scalar extra arguments).
    dtype: "any" keeps x's dtype for every dtype; "float" keeps it for floating x only.
    finite_grad: the zero gradient that torch.where sends to an untaken branch stays zero through
      the op at every input, NaN and +-inf included (0 * derivative: a derivative that is infinite
      somewhere, or that depends on the input's value, gives NaN there; measured by the tests).
    raises: raises for some non-floating x (bool or int dtypes); never for floating x.
    dim_arg: its number argument is a dim (softmax): only -1 and 0 are valid for every tensor.
    autocast: CUDA autocast runs it in float32 for float16/bfloat16 input (PyTorch's autocast op
      reference, "CUDA Ops that can autocast to float32"), so its result may be float32 where x is
      not; CPU autocast does not (tests/test_gm1_tables.py measures both where it can).
    """

    shape: bool = True
    dtype: str = "float"
    finite_grad: bool = True
    raises: bool = False
    dim_arg: bool = False
    autocast: bool = False


ELEMENTWISE: dict[str, Op] = {
    # Measured on torch 2.13 (tests/test_gm1_tables.py checks every entry against torch):
    # clamp/clip with float bounds turn int and bool tensors into float32; with int bounds ints stay.
    "clamp": Op(dtype="float"), "clip": Op(dtype="float"),
    "clamp_min": Op(dtype="float"), "clamp_max": Op(dtype="float"),
    "nan_to_num": Op(dtype="any"),
    # masked_fill broadcasts self against the mask: the result can be larger than x.
    "masked_fill": Op(shape=False, dtype="any"),
    # neg/abs/relu/hardtanh keep int dtypes but raise on bool tensors.
    "neg": Op(dtype="any", raises=True), "negative": Op(dtype="any", raises=True),
    "abs": Op(dtype="any", raises=True), "relu": Op(dtype="any", raises=True), "sign": Op(dtype="any"),
    # value-dependent derivative: NaN where the input is NaN (and +-inf for most of them)
    "tanh": Op(finite_grad=False), "sigmoid": Op(finite_grad=False), "sin": Op(finite_grad=False),
    "cos": Op(finite_grad=False), "softsign": Op(raises=True, finite_grad=False),
    "hardtanh": Op(raises=True),
    # gelu/silu/leaky_relu raise on int and bool tensors.
    "gelu": Op(raises=True, finite_grad=False), "silu": Op(raises=True, finite_grad=False),
    "leaky_relu": Op(raises=True),
    # detach cuts the graph: torch.where(c, x.detach(), x) gives zero gradients where `if` gave none.
    "detach": Op(dtype="any", finite_grad=False), "clone": Op(dtype="any"), "contiguous": Op(dtype="any"),
    # finite value but unbounded or infinite derivative somewhere (exp: overflow to inf)
    "exp": Op(finite_grad=False, autocast=True), "sqrt": Op(finite_grad=False),
    "rsqrt": Op(finite_grad=False, autocast=True),
    "log": Op(finite_grad=False, autocast=True), "log1p": Op(finite_grad=False, autocast=True),
    "reciprocal": Op(finite_grad=False, autocast=True),
    "pow": Op(finite_grad=False, autocast=True),
    # activations that raise on int and bool tensors
    "softplus": Op(raises=True, finite_grad=False, autocast=True), "mish": Op(raises=True, finite_grad=False),
    "elu": Op(raises=True), "selu": Op(raises=True),
    "celu": Op(raises=True), "hardswish": Op(raises=True), "hardsigmoid": Op(raises=True),
    "logsigmoid": Op(raises=True, finite_grad=False), "relu6": Op(dtype="any", raises=True),
    # ints and bools become float32
    "erf": Op(finite_grad=False), "erfc": Op(finite_grad=False), "atan": Op(finite_grad=False),
    "tanhshrink": Op(raises=True, finite_grad=False),
    # piecewise constant: zero derivative; keep ints, raise on bool
    "floor": Op(dtype="any", raises=True), "ceil": Op(dtype="any", raises=True),
    "round": Op(dtype="any", raises=True), "trunc": Op(dtype="any", raises=True),
    "square": Op(finite_grad=False, autocast=True), "expm1": Op(finite_grad=False, autocast=True),
    "sinh": Op(finite_grad=False, autocast=True),
    "softmax": Op(raises=True, dim_arg=True, finite_grad=False, autocast=True),
    "log_softmax": Op(raises=True, dim_arg=True, finite_grad=False, autocast=True),
}
# Op.autocast for arithmetic: `x ** n` (`__pow__`) and `n / x` (`__rtruediv__`, torch's
# `x.reciprocal() * n`) autocast to float32 on CUDA; `x / n`, `x * n`, `x + n`, `n - x` do not.
AUTOCAST_ARITHMETIC = {"x ** n", "n / x"}
# Outside ELEMENTWISE, the ops whose backward only routes, sums or masks the gradient (views,
# indexing, joins, sums, dtype casts, masks): zero in, zero out, at NaN and +-inf too. Any other
# call in a branch value (matmul, norm, amax, ...) counts as not finite_grad, except the static
# facts above (`h.size(-1)`, `torch.finfo(h.dtype).min`) and Python-value builtins (`float("-inf")`).
ROUTING_GRAD = {"view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "squeeze", "unsqueeze",
                "permute", "transpose", "t", "expand", "expand_as", "repeat", "tile", "narrow", "select",
                "contiguous", "clone", "to", "float", "half", "double", "bfloat16", "type_as", "cat", "concat",
                "concatenate", "stack", "chunk", "split", "unbind", "flip", "roll", "tril", "triu", "where",
                "masked_fill", "gather", "index_select", "take_along_dim", "sum", "mean", "cumsum", "diagonal",
                "movedim", "swapaxes", "zeros_like", "ones_like", "full_like", "empty_like", "new_zeros",
                "new_ones", "new_full", "new_empty", "zeros", "ones", "full", "arange", "tensor", "as_tensor"}
# Tensor constructors: no side effects, but they raise on bad arguments (ragged lists, bad sizes).
CONSTRUCTORS = {"torch.tensor", "torch.as_tensor", "torch.zeros", "torch.ones", "torch.full", "torch.arange",
                "torch.zeros_like", "torch.ones_like", "torch.full_like", "torch.empty_like", "torch.linspace"}
# Calls that always make a new tensor object, never return their input (unlike `.to()`, `.float()`,
# `.contiguous()`, `torch.as_tensor`): a flag set on the result dies with it.
NEW_OBJECT_METHODS = {"view", "unsqueeze", "squeeze", "permute", "transpose", "expand", "narrow", "select",
                      "detach", "clone", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"}
NEW_OBJECT_FUNCS = {f"torch.{n}" for n in ("zeros", "ones", "empty", "full", "rand", "randn", "arange", "tensor",
                                           "zeros_like", "ones_like", "empty_like", "full_like", "cat", "stack")}
# Reductions that raise on an empty tensor (the others return a value).
RAISES_ON_EMPTY = {"max", "min", "amax", "amin", "argmax", "argmin"}
# Reductions that warn (a visible side effect) on inputs with too few elements.
WARNS_ON_EMPTY = {"std", "var"}

# Functions and methods that return tensors (besides the tables above).
TENSOR_FUNCS = {"where", "cat", "stack", "zeros", "ones", "zeros_like", "ones_like", "full", "full_like",
                "empty", "empty_like", "arange", "linspace", "tensor", "as_tensor", "matmul", "mm", "bmm",
                "einsum", "softmax", "log_softmax", "layer_norm", "linear", "conv1d", "conv2d", "dropout",
                "gather", "index_select", "masked_select", "nonzero", "unique", "flatten", "reshape",
                "transpose", "permute", "squeeze", "unsqueeze", "topk", "sort", "cumsum", "outer", "rand",
                "randn", "randint", "rand_like", "randn_like", "tril", "triu", "diag", "roll", "flip",
                "baddbmm", "addmm", "embedding", "cross_entropy", "mse_loss", "nll_loss", "normalize",
                "scaled_dot_product_attention", "pad", "interpolate", "bucketize", "searchsorted", "diff", "eye"}
TENSOR_METHODS = {"view", "reshape", "transpose", "permute", "squeeze", "unsqueeze", "flatten", "float",
                  "half", "double", "bfloat16", "int", "long", "bool", "to", "type_as", "expand",
                  "expand_as", "repeat", "matmul", "softmax", "masked_select", "nonzero", "unique",
                  "gather", "index_select", "cumsum", "t", "mT", "T", "mean", "cpu", "cuda", "diff"}
# Functions and methods that return a tuple of tensors: `x_min, x_max = torch.aminmax(x)` unpacks tensors
# (torchao's observers; each measured to break on `if x_min > 0:`). Read only where unpacked.
TUPLE_RESULTS = {"aminmax", "var_mean", "std_mean", "kthvalue", "mode", "frexp", "cummax", "cummin", "chunk",
                 "split", "tensor_split", "unbind", "sort", "topk", "slogdet", "eigh", "qr"}
# Methods that keep the dtype (shape and layout changes, moves): a bool mask stays a bool mask.
SHAPE_METHODS = {"view", "reshape", "transpose", "permute", "squeeze", "unsqueeze", "flatten", "expand",
                 "expand_as", "repeat", "t", "contiguous", "clone", "detach", "cpu", "cuda", "flip", "roll",
                 "narrow", "select", "repeat_interleave", "view_as", "reshape_as"}
CAST_METHODS = {"float": "float", "half": "float", "double": "float", "bfloat16": "float",
                "int": "int", "long": "int", "bool": "bool"}

# nn layers whose output is a floating tensor.
FLOAT_MODULES = {"Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
                 "LayerNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "RMSNorm", "Embedding",
                 "Dropout", "GELU", "ReLU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Identity"}

# Calls that are known to have no side effects (in addition to the tables above).
PURE_BUILTINS = {"len", "isinstance", "min", "max", "abs", "float", "int", "bool", "tuple", "range"}

# Methods whose `self.x = Ctor(...)` say what `self.x` is (summary's attrs, scope._attr_method).
INIT_METHODS = ("__init__", "__post_init__")

# torch dtypes by class (a factory's `dtype=` keyword): "bool" | "int" | "float".
DTYPE_CLASSES = {"bool": "bool", **{t: "int" for t in ("uint8", "int8", "int16", "int32", "int64", "long", "int", "short")},
                 **{t: "float" for t in ("float16", "float32", "float64", "bfloat16", "half", "float", "double")}}

# Libraries whose values are never tensors: `.any()`/`.sum()` on them is not a tensor reduction.
FOREIGN_MODULES = {"pandas", "scipy", "sklearn", "PIL", "cv2", "polars", "pyarrow", "librosa", "soundfile",
                   "matplotlib", "networkx", "shapely"}

# Annotations that name a tensor, and the dtype each says (tensors._param; gate.py on `ast`).
TENSOR_TYPES = {"torch.Tensor": None, "torch.FloatTensor": "float", "torch.LongTensor": "int", "torch.BoolTensor": "bool"}

# Logging levels; a logger's methods, plus the `*_once` wrappers (transformers' warning_once/info_once) and
# transformers' warning_advice (effects.LoggerFinder, GM202; gate.py).
LEVELS = ("debug", "info", "warning", "warn", "error", "exception", "critical", "fatal")
LOGGER_METHODS = frozenset(LEVELS + ("log", "warning_advice") + tuple(f"{lv}_once" for lv in LEVELS))

# Calls that make a logger (`logging.getLogger`, transformers' `get_logger`, vLLM/SGLang's `init_logger`).
LOGGER_FACTORIES = ("getLogger", "get_logger", "init_logger")

# torch functions that raise TypeError unless their first argument is a tensor (measured on torch 2.13 with
# floats, ints, lists, None, NumPy arrays): a parameter handed to one, in a statement every call reaches, is a
# tensor (tensors.FunctionFacts._used_as_tensor).
TENSOR_ONLY_LIKE = frozenset({"torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like",
                              "torch.rand_like", "torch.randn_like", "torch.randint_like"})

# torch.nn classes that make parameters when built (GM923): Dynamo breaks at `torch.nn.Parameter()`
# ("Attempted to use `torch.nn.Parameter()` constructor with Dynamo", measured on torch 2.13). None: always;
# (keyword, position, default): only while that flag is true (`LayerNorm(4, elementwise_affine=False)` makes
# none, and `InstanceNorm1d` makes them only with `affine=True`). tests/test_gm9_breaks.py builds each one.
PARAMETER_LAYERS = {
    **dict.fromkeys(f"torch.nn.{n}" for n in (
        "Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
        "Embedding", "EmbeddingBag", "PReLU", "MultiheadAttention", "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell",
        "RNNCell", "TransformerEncoderLayer", "TransformerDecoderLayer", "LazyLinear", "LazyConv1d", "LazyConv2d",
        "LazyConv3d")),
    "torch.nn.LayerNorm": ("elementwise_affine", 2, True),
    "torch.nn.RMSNorm": ("elementwise_affine", 2, True),
    "torch.nn.GroupNorm": ("affine", 3, True),
    **{f"torch.nn.BatchNorm{d}d": ("affine", 3, True) for d in (1, 2, 3)},
    **{f"torch.nn.InstanceNorm{d}d": ("affine", 3, False) for d in (1, 2, 3)},
}
PARAMETER = {"torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Embedding.from_pretrained",
             "torch.nn.EmbeddingBag.from_pretrained"}


# Names the rules below report, read by gate.py too (it may not import the rules: they import libcst).
# GM905:
DYNAMIC_FUNCS = {"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "bincount"}
# GM906:
# Calls whose positional arguments (after `skip`) are Python ints (sizes, offsets): method -> skip.
SIZE_METHODS = {"view": 0, "reshape": 0, "expand": 0, "repeat": 0, "new_zeros": 0, "new_ones": 0, "new_empty": 0,
                "narrow": 1}
SIZE_FUNCS = {"torch.zeros": 0, "torch.ones": 0, "torch.empty": 0, "torch.nn.functional.one_hot": 1}
# GM913:
# Measured on torch 2.13 (CPU): both break; sdpa_kernel and record_function are traced.
BACKEND_FLAGS = {"torch.backends.cudnn.flags", "torch.backends.mkldnn.flags"}
# GM914:
MODULE_CASTS = {"to", "half", "float", "double", "bfloat16", "type"}  # `self.layer.<cast>()`
NOT_LAYERS = {"Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"}  # tensors: `.to()` is traced
# GM919:
RNNS = {f"torch.nn.{n}" for n in ("LSTM", "GRU", "RNN")} | {f"torch.nn.modules.rnn.{n}" for n in ("LSTM", "GRU", "RNN")}
# GM920:
# Measured on torch 2.13 (CPU, `with` around one op in a compiled function): each breaks the graph.
# Traced there, not reported: no_grad, enable_grad, set_grad_enabled, inference_mode, autocast,
# record_function, forward_ad.dual_level, warnings.catch_warnings, contextlib.suppress, sdpa_kernel.
UNTRACEABLE_CONTEXTS = {
    "torch.random.fork_rng": "GB0208 \"torch.* op returned non-Tensor\"",
    "torch.backends.cuda.sdp_kernel": "GB0208 \"torch.* op returned non-Tensor\"",
    "torch.autograd.detect_anomaly": "\"Attempted to inline function marked as skipped\"",
    "torch.autograd.set_detect_anomaly": "\"Attempted to inline function marked as skipped\"",
    "torch.autograd.graph.saved_tensors_hooks": "\"Attempted to inline function marked as skipped\"",
    "torch.autograd.graph.save_on_cpu": "\"Attempted to inline function marked as skipped\"",
    "torch.utils.checkpoint.set_checkpoint_early_stop": "\"Attempted to call function marked as skipped\"",
}
# GM921:
# Measured on torch 2.13 (CPU, one call beside one op in a compiled function): each breaks the graph.
# Traced there, not reported: torch.seed(). Not measured (no GPU): the torch.cuda.* RNG state calls.
RNG_STATE = {
    "torch.get_rng_state": "\"Attempted to call function marked as skipped\"",
    "torch.set_rng_state": "\"Attempted to call function marked as skipped\"",
    "torch.random.get_rng_state": "\"Attempted to call function marked as skipped\"",
    "torch.random.set_rng_state": "\"Attempted to call function marked as skipped\"",
    "torch.manual_seed": "\"Attempted to call function marked as skipped\"",
    "torch.random.manual_seed": "\"Attempted to call function marked as skipped\"",
    "torch.initial_seed": "GB0208 \"torch.* op returned non-Tensor\"",
    "torch.random.initial_seed": "GB0208 \"torch.* op returned non-Tensor\"",
    "torch.Generator": "\"An opaque object was created in the middle of the program\"",
}
# GM922:
GRAD_FUNCS = {"torch.autograd.grad"}
