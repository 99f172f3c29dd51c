"""Corpus theme ``layers``: ``torch.nn.functional`` layers and small modules as a model uses them.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from .builders import leaf, rand, seeded
from .registry import Inputs, case


# ---------------------------------------------------------------- from cases_basic


@case("layers", mode="training")
def linear():
    def f(x, w, b):
        return F.linear(x, w, b)
    def make():
        x, w, b = leaf(2, 4), leaf(3, 4), leaf(3)
        return Inputs((x, w, b), leaves=(x, w, b))
    return f, seeded(make)


@case("layers", mode="training")
def conv2d():
    def f(x, w, b):
        return F.conv2d(x, w, b, padding=1)
    def make():
        x, w, b = leaf(1, 2, 5, 5), leaf(3, 2, 3, 3), leaf(3)
        return Inputs((x, w, b), leaves=(x, w, b))
    return f, seeded(make)


@case("layers", mode="training")
def conv2d_stride_pool():
    def f(x, w):
        return F.max_pool2d(F.relu(F.conv2d(x, w, stride=1)), 2)
    def make():
        x, w = leaf(1, 1, 6, 6), leaf(2, 1, 3, 3)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


@case("layers", mode="training")
def layer_norm():
    def f(x, w, b):
        return F.layer_norm(x, (8,), w, b)
    def make():
        x, w, b = leaf(3, 8), leaf(8), leaf(8)
        return Inputs((x, w, b), leaves=(x, w, b))
    return f, seeded(make)


@case("layers", mode="training")
def softmax_and_log_softmax():
    def f(x):
        return F.softmax(x, dim=-1), F.log_softmax(x, dim=0)
    def make():
        x = leaf(3, 5)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("layers", mode="training", tags=("int",))
def embedding():
    def f(idx, weight):
        return F.embedding(idx, weight)
    def make():
        w = leaf(10, 4)
        return Inputs((torch.tensor([[1, 3], [3, 9]]), w), leaves=(w,))
    return f, seeded(make)


@case("layers", mode="training")
def dropout_eval():
    def f(x, w):
        return F.dropout(F.linear(x, w), p=0.5, training=False)
    def make():
        x, w = leaf(2, 4), leaf(3, 4)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


@case("layers", mode="training")
def mlp():
    def f(x, w1, b1, w2, b2):
        return F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2).relu()
    def make():
        x, w1, b1, w2, b2 = leaf(2, 4), leaf(8, 4), leaf(8), leaf(3, 8), leaf(3)
        return Inputs((x, w1, b1, w2, b2), leaves=(x, w1, b1, w2, b2))
    return f, seeded(make)


@case("layers", mode="training")
def batchnorm_eval():
    def f(x, rm, rv, w, b):
        return F.batch_norm(x, rm, rv, w, b, training=False)
    def make():
        x, w, b = leaf(4, 3), leaf(3), leaf(3)
        return Inputs((x, torch.zeros(3), torch.ones(3), w, b), leaves=(x, w, b))
    return f, seeded(make)


@case("layers", mode="training")
def attention():
    def f(q, k, v):
        a = F.softmax(q @ k.transpose(-2, -1) / 2.0, dim=-1)
        return a @ v
    def make():
        q, k, v = leaf(3, 4), leaf(3, 4), leaf(3, 4)
        return Inputs((q, k, v), leaves=(q, k, v))
    return f, seeded(make)


@case("layers", mode="training", tags=("int",))
def cross_entropy():
    def f(logits, target):
        return F.cross_entropy(logits, target)
    def make():
        x = leaf(4, 5)
        return Inputs((x, torch.tensor([0, 4, 2, 2])), leaves=(x,))
    return f, seeded(make)


@case("layers", mode="training")
def group_norm_and_avg_pool():
    def f(x, w, b):
        return F.avg_pool2d(F.group_norm(x, 2, w, b), 2)
    def make():
        x, w, b = leaf(1, 4, 4, 4), leaf(4), leaf(4)
        return Inputs((x, w, b), leaves=(x, w, b))
    return f, seeded(make)


@case("layers", mode="training")
def mse_loss():
    def f(pred, target):
        return F.mse_loss(pred, target), F.smooth_l1_loss(pred, target)
    def make():
        p = leaf(6)
        return Inputs((p, rand(6)), leaves=(p,))
    return f, seeded(make)


# ---------------------------------------------------------------- recurrent layers and CTC
# (project_issue:38: nn.LSTM's backward lacked the mkldnn workspace,
# NOTE [kernels that read grad mode]; CTCLoss with Python lists of lengths was refused,
# NOTE [integer lists written into a tensor's memory]). The modules' parameters are
# arguments, through functional_call.


def _recurrent(cls, seq_first=False, **kw):
    torch.manual_seed(0)
    module = cls(4, 5, **kw)

    def f(params, x):
        return torch.func.functional_call(module, params, (x,))

    def make():
        params = {k: v.detach().clone().requires_grad_() for k, v in module.named_parameters()}
        x = leaf(3, 2, 4) if seq_first else leaf(2, 3, 4)
        return Inputs((params, x), leaves=(*params.values(), x))
    return f, seeded(make)


@case("layers", mode="training", tags=("project_issue:38", "rnn"))
def lstm_two_layers():
    return _recurrent(torch.nn.LSTM, num_layers=2, batch_first=True)


@case("layers", mode="training", tags=("project_issue:38", "rnn"))
def lstm_bidirectional_sequence_first():
    return _recurrent(torch.nn.LSTM, seq_first=True, bidirectional=True)


@case("layers", mode="training", tags=("project_issue:38", "rnn"))
def gru_batch_first():
    return _recurrent(torch.nn.GRU, num_layers=2, batch_first=True)


@case("layers", mode="training", tags=("project_issue:38", "rnn"))
def rnn_tanh_bidirectional():
    return _recurrent(torch.nn.RNN, seq_first=True, bidirectional=True)


def _log_probs():
    return F.log_softmax(rand(6, 2, 5), dim=2).detach().requires_grad_()


@case("layers", mode="training", tags=("project_issue:38", "ctc", "int"))
def ctc_loss_lengths_as_lists():
    """Python lists of lengths, reduction "mean" (divides by the target lengths)."""
    ctc = torch.nn.CTCLoss()

    def f(log_probs, targets):
        return ctc(log_probs, targets, [6, 5], [3, 2])

    def make():
        lp = _log_probs()
        return Inputs((lp, torch.tensor([[1, 2, 2], [3, 4, 0]])), leaves=(lp,))
    return f, seeded(make)


@case("layers", mode="training", tags=("project_issue:38", "ctc", "int"))
def ctc_loss_lengths_as_tensors_zero_infinity():
    """Tensors of lengths, one target too long for its input (infinite loss, zeroed)."""
    def f(log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, reduction="sum",
                          zero_infinity=True)

    def make():
        lp = _log_probs()
        return Inputs((lp, torch.tensor([1, 2, 1, 3, 4, 3, 4, 3]), torch.tensor([6, 3]),
                       torch.tensor([3, 5])), leaves=(lp,))
    return f, seeded(make)
