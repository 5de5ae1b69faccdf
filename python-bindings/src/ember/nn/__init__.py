"""ember.nn: modules (layers, containers, losses), nn.functional, nn.init and nn.utils, with
PyTorch's names. Every computation is a bound op; the modules hold parameters and options."""

from ember.nn import functional, init, utils
from ember.nn.activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from ember.nn.attention import MultiheadAttention
from ember.nn.container import Identity, ModuleDict, ModuleList, Sequential
from ember.nn.layers import Conv1d, Conv2d, Embedding, Linear
from ember.nn.loss import BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from ember.nn.module import Module
from ember.nn.norm import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm
from ember.nn.parameter import Parameter
from ember.nn.pooling import AdaptiveAvgPool2d, AvgPool2d, Dropout, Flatten, MaxPool2d

__all__ = [
    "AdaptiveAvgPool2d", "AvgPool2d", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d",
    "Conv1d", "Conv2d", "CrossEntropyLoss", "Dropout", "Embedding", "Flatten", "GELU",
    "GroupNorm", "Identity",
    "L1Loss", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "MSELoss", "MaxPool2d", "Module",
    "ModuleDict", "ModuleList", "MultiheadAttention", "NLLLoss", "Parameter", "ReLU", "SiLU",
    "Sigmoid", "Sequential", "Softmax", "Tanh", "functional", "init", "utils",
]
