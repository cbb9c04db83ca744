"""Theano's lazy conditional: ``hypatia.ifelse.ifelse`` (theano.ifelse.ifelse).

Unlike ``T.switch``, which computes both branches and picks elementwise, ``ifelse`` evaluates only
the branch its scalar condition selects: the nodes that only the other branch needs do not run.
"""
from hypatia import _core
from hypatia._convert import Variable, as_tensor_variable

IfElse = _core.IfElse

__all__ = ["ifelse", "IfElse"]


def ifelse(condition, then_branch, else_branch, name=None):
    """then_branch when condition (a scalar) is true (nonzero), else else_branch; only that branch
    is computed.

    then_branch and else_branch are a variable each, or lists of the same length (then a list
    comes back). A pair must have the same dtype and number of dimensions (their shapes may
    differ; TypeError otherwise, naming the output and both types). Non-variable values become
    constants of the other branch's dtype and ndim (length 1 on the added axes). ``name`` names
    the outputs that have no name.
    """
    single = not isinstance(then_branch, (list, tuple))
    thens = [then_branch] if single else list(then_branch)
    elses = [else_branch] if not isinstance(else_branch, (list, tuple)) else list(else_branch)
    if len(thens) != len(elses):
        raise ValueError(f"ifelse: the then branch has {len(thens)} values but the else branch has {len(elses)}; "
                         "give one value per output to each")
    cond = as_tensor_variable(condition)
    t_vars, e_vars = [], []
    for t, e in zip(thens, elses):
        if not isinstance(t, Variable) and isinstance(e, Variable):
            t = as_tensor_variable(t, dtype=e.dtype, ndim=e.ndim)
        elif not isinstance(e, Variable) and isinstance(t, Variable):
            e = as_tensor_variable(e, dtype=t.dtype, ndim=t.ndim)
        t_vars.append(as_tensor_variable(t))
        e_vars.append(as_tensor_variable(e))
    outs = _core.ifelse(cond, t_vars, e_vars)
    if name is not None:
        for o in outs:
            if not o.name:
                o.name = name
    return outs[0] if single else list(outs)
