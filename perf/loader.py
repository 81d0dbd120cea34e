"""Load a case's model factory inside a worker process."""
import importlib.util
import sys


def load(spec):
    """spec: {"kind": "local", "path": file} or {"kind": "hf", "case": name}. Returns (model, inputs, raise_idx)."""
    if spec["kind"] == "local":
        mod_spec = importlib.util.spec_from_file_location("perf_case_model", spec["path"])
        mod = importlib.util.module_from_spec(mod_spec)
        sys.modules[mod_spec.name] = mod  # Dynamo and pickling look classes up by module name
        mod_spec.loader.exec_module(mod)
        model, inputs = mod.make()
        return model, list(inputs), list(getattr(mod, "EXPECT_RAISE", []))
    from perf import hf_models
    model, inputs = hf_models.make(spec["case"])
    return model, list(inputs), list(hf_models.EXPECT_RAISE.get(spec["case"], []))


def _local_attr(spec, name, default):
    mod = sys.modules.get("perf_case_model")
    if mod is None or getattr(mod, "__file__", None) != spec["path"]:
        return default
    return getattr(mod, name, default)


def is_train(spec):
    """Train cases run forward + backward in train mode (hf_models.TRAIN; a local file's TRAIN = True)."""
    if spec["kind"] == "local":
        return bool(_local_attr(spec, "TRAIN", False))
    from perf import hf_models
    return spec["case"] in hf_models.TRAIN


def dynamic_dims(spec):
    """{input name or position: dim} for mark_dynamic, or None (default: dim 1 of every tensor with >= 2 dims)."""
    if spec["kind"] == "local":
        return _local_attr(spec, "DYNAMIC_DIMS", None)
    from perf import hf_models
    return hf_models.DYNAMIC_DIMS.get(spec["case"])


def call(model, inp):
    if isinstance(inp, dict):
        return model(**inp)
    return model(*inp)


def to_device(inp, device):
    if isinstance(inp, dict):
        return {k: (v.to(device) if hasattr(v, "to") else v) for k, v in inp.items()}
    return tuple(v.to(device) if hasattr(v, "to") else v for v in inp)


def leaves(out):
    """Flatten a model output (tensor, tuple, ModelOutput) into a list of tensors."""
    import torch
    if isinstance(out, torch.Tensor):
        return [out]
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    if isinstance(out, dict):
        out = list(out.values())
    res = []
    if isinstance(out, (list, tuple)):
        for o in out:
            res.extend(leaves(o))
    return res
