"""tkc kernels as torch operators: `register` makes a kernel a
`torch.library.custom_op` (with a fake implementation, so
`torch.compile(fullgraph=True)` traces through it) that takes the kernel's
input tensors and constants and returns its outputs; `pair` gives such an
operator a backward."""

import torch

from . import _dims
from .errors import ShapeError


def _row_padded_strides(shape, dtype_bytes, alignment):
    """Contiguous strides, with the rows padded so that each outer stride is
    a multiple of `alignment` bytes (docs/abi.md)."""
    per = max(1, alignment // dtype_bytes)
    strides, acc = [], 1
    for i, size in enumerate(reversed(shape)):
        strides.append(acc)
        size = max(int(size), 1)
        acc *= -(-size // per) * per if i == 0 else size
    return tuple(reversed(strides))


TORCH_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "i32": torch.int32,
                "i1": torch.bool, "f8e4m3": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2}


class _ShapePlan:
    """What output_shapes needs of a kernel's info, worked out once: which
    input size binds each dim name (the first that has it alone), and each
    output's dims as ints, names or parsed expressions."""

    def __init__(self, info):
        self.ranks = [(i, p.rank, p.name) for i, p in enumerate(info.inputs)]
        self.binders = [(i, axis, dim) for i, p in enumerate(info.inputs) for axis, dim in enumerate(p.dims)
                        if _dims.is_symbol(dim)]
        self.outputs = []
        for param in info.outputs:
            names = [s for d in param.dims if isinstance(d, str) for s in _dims.symbols(d)]
            self.outputs.append((param.name, tuple(dict.fromkeys(names)), param.dims))


_plans = {}


def _plan(info):
    # Keyed by identity (KernelInfo holds a dict, so it has no hash); the
    # info is kept with its plan so that its id is never reused.
    entry = _plans.get(id(info))
    if entry is None or entry[0] is not info:
        entry = _plans[id(info)] = (info, _ShapePlan(info))
    return entry[1]


def output_shapes(info, inputs, constants=()):
    """{output name: shape} from the input tensors' sizes and the constants.
    A derived dim (`cdiv(M, 64)`) is computed from the names it uses; an
    input's derived dims bind nothing (the launcher checks them)."""
    plan = _plan(info)
    given = len(inputs)  # fewer than the kernel's: the missing ones bind nothing
    for i, rank, name in plan.ranks:
        if i < given and inputs[i].dim() != rank:
            raise ShapeError(f"{name} must have rank {rank}, not {inputs[i].dim()}", info.name)
    values = dict(zip(info.constants, constants))
    for i, axis, name in plan.binders:
        if i < given:
            values.setdefault(name, inputs[i].shape[axis])
    shapes = {}
    for name, needs, dims in plan.outputs:
        missing = [n for n in needs if n not in values]
        if missing:
            raise ShapeError(f"no input gives {name}'s dims {missing}", info.name)
        shape = []
        for d in dims:
            try:
                shape.append(_dims.evaluate(d, values) if isinstance(d, str) else d)
            except ZeroDivisionError:
                raise ShapeError(f"{name}'s dim `{d}` divides by zero for these inputs", info.name) from None
        shapes[name] = tuple(shape)
    return shapes


def new_outputs(info, inputs, constants, device, zero=()):
    """The outputs a call writes, with the layout the launcher accepts."""
    out = []
    for param, shape in zip(info.outputs, output_shapes(info, inputs, constants).values()):
        dtype = TORCH_DTYPES[param.dtype]
        strides = _row_padded_strides(shape, torch.empty((), dtype=dtype).element_size(), param.alignment)
        t = torch.empty_strided(shape, strides, dtype=dtype, device=device)
        out.append(t.zero_() if param.name in zero else t)
    return out


def schema_of(info):
    args = [f"Tensor {p.name}" for p in info.inputs] + [f"int {c}" for c in info.constants]
    outs = ["Tensor"] * len(info.outputs)
    return f"({', '.join(args)}) -> " + (outs[0] if len(outs) == 1 else f"({', '.join(outs)})")


def call_with_outputs(launcher, inputs, constants, outputs):
    """Calls `launcher` with inputs and outputs in declaration order."""
    ins, outs = iter(inputs), iter(outputs)
    tensors = [next(outs) if p.output else next(ins) for p in launcher.info.tensors]
    launcher(*tensors, *constants)


def register(launcher, name=None, namespace="tkc", zero_outputs=()):
    """Registers `launcher` (a kernel of a tkc.load()ed library) as the
    operator `torch.ops.NAMESPACE.NAME(inputs..., constants...) -> outputs`;
    outputs in `zero_outputs` start zeroed. Returns the custom_op."""
    info = launcher.info
    n_in = len(info.inputs)
    qualname = f"{namespace}::{name or info.name}"

    def run(*args):
        inputs, constants = args[:n_in], args[n_in:]
        outputs = new_outputs(info, inputs, constants, inputs[0].device, zero_outputs)
        call_with_outputs(launcher, inputs, constants, outputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    op = torch.library.custom_op(qualname, run, mutates_args=(), device_types="cuda", schema=schema_of(info))

    @op.register_fake
    def _(*args):
        inputs, constants = args[:n_in], args[n_in:]
        outputs = new_outputs(info, inputs, constants, inputs[0].device)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    return op


def pair(forward, backward, n_inputs, differentiable=None):
    """Gives the operator `forward` (from `register`) a backward.

    backward(inputs, constants, outputs, grads) returns one gradient (or
    None) per input tensor; it gets the forward's inputs, constants and
    outputs, and the gradients of the outputs (None where not needed).
    `differentiable` (default: every input) names the indices of the inputs
    that take gradients."""

    def setup_context(ctx, inputs, output):
        outputs = output if isinstance(output, tuple) else (output,)
        ctx.save_for_backward(*inputs[:n_inputs], *outputs)
        ctx.constants = tuple(inputs[n_inputs:])
        ctx.n_outputs = len(outputs)

    def grad(ctx, *grads):
        saved = ctx.saved_tensors
        inputs, outputs = saved[:n_inputs], saved[n_inputs:]
        result = list(backward(inputs, ctx.constants, outputs, grads))
        if differentiable is not None:
            result = [g if i in differentiable else None for i, g in enumerate(result)]
        return tuple(result) + (None,) * len(ctx.constants)

    forward.register_autograd(grad, setup_context=setup_context)
    return forward


_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)


def _compiling():
    """Whether torch.compile (or export) is tracing the caller."""
    return _is_compiling() if _is_compiling is not None else torch._dynamo.is_compiling()


class Operator:
    """A kernel call as a torch operator, two ways: under torch.compile, the
    custom_op `qualname` (traced through its fake implementation); in eager
    mode, the implementation called directly, with autograd through an
    autograd.Function. The eager way skips the dispatcher's host time on
    every call, which a training step pays once per kernel per layer.

    Used as a decorator on the implementation; `register_fake` and
    `differentiable` complete it."""

    def __init__(self, qualname, impl):
        self.qualname = qualname
        self.impl = impl
        self.custom = torch.library.custom_op(qualname, impl, mutates_args=(), device_types="cuda")
        self.function = None
        self.__doc__ = impl.__doc__

    def register_fake(self, fake):
        self.custom.register_fake(fake)
        return fake

    def differentiable(self, setup_context, make_backward, *backward_ops):
        """Gives the operator a backward. make_backward(*calls) returns
        backward(ctx, *grads), where calls are the operators in backward_ops
        as the backward must call them: their custom_ops for the traced
        graph, their implementations in eager mode. setup_context(ctx,
        inputs, output) saves what the backward needs; gradients of outputs
        the caller did not use may arrive as None."""
        self.custom.register_autograd(make_backward(*(op.custom for op in backward_ops)), setup_context=setup_context)
        impl = self.impl

        # The classic form, forward(ctx, *args), on purpose: with a separate
        # setup_context, Function.apply binds the arguments to forward's
        # signature through inspect on every call.
        def forward(ctx, *args):
            # Unused outputs' gradients stay None rather than zero-filled
            # tensors: a kernel launch saved per statistic.
            ctx.set_materialize_grads(False)
            output = impl(*args)
            setup_context(ctx, args, output)
            return output

        name = self.impl.__name__.title().replace("_", "")
        self.function = type(name, (torch.autograd.Function,), {
            "forward": staticmethod(forward),
            "backward": staticmethod(make_backward(*(op.impl for op in backward_ops))),
        })

    def __call__(self, *args):
        if _compiling():
            return self.custom(*args)
        if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            if self.function is None:
                raise RuntimeError(f"{self.qualname} has no backward: call it on tensors that do not require "
                                   f"gradients, or under torch.no_grad()")
            return self.function.apply(*args)
        return self.impl(*args)


def operator(qualname):
    """Decorator: the implementation as an Operator named `qualname`."""
    return lambda impl: Operator(qualname, impl)
