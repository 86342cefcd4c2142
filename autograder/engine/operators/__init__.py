"""Exercise 5: operators the lecture never did, each a ``backward_rules.Step`` of one table, in backward order.

The reference, the carried-forward judgement, the diagnoses, the rule probes, the notebook's generated graded cells
and its self-checks all read ``OPERATOR_STEPS``. Adding an operator is a Step here (its forward line, its terms, its
points, its mistakes in words) plus its text and answer in the notebook.

  elementwise  dropout with a fixed mask, GELU (exact), ReLU and LeakyReLU
  layernorm    LayerNorm over the features (gain, bias, input), and the first layer back to the residual stream
  attention    one attention head inside a skip connection: the branch, weights, values, scores, queries, keys, emb
  exposures    the inputs of Exercise 5's setup chosen so that a mistake shows (ReLU's kink), and its margins
"""

from .attention import EMBEDDING, KEYS, QUERIES, RESIDUAL_BRANCH, SOFTMAX, VALUES, WEIGHTS
from .elementwise import DROPOUT, GELU, LEAKY_RELU, RELU
from .layernorm import FIRST_LAYER, LAYERNORM, LAYERNORM_BIAS, LAYERNORM_GAIN

NOTEBOOK = "ex5_new_operators"

# backward order: from the loss down the network, then Part 6's two small networks
OPERATOR_STEPS = [
    DROPOUT,
    GELU,
    LAYERNORM_GAIN,
    LAYERNORM_BIAS,
    LAYERNORM,
    FIRST_LAYER,
    RESIDUAL_BRANCH,
    WEIGHTS,
    VALUES,
    SOFTMAX,
    QUERIES,
    KEYS,
    EMBEDDING,
    RELU,
    LEAKY_RELU,
]
OPERATOR_STEP_BY_NAME = {step.name: step for step in OPERATOR_STEPS}

# the upstream gradients the notebook hands out (its locked cell setup_upstream): the grader takes its own copies
GIVEN = ("hdrop", "relu_out", "leaky_out")

__all__ = ["GIVEN", "NOTEBOOK", "OPERATOR_STEPS", "OPERATOR_STEP_BY_NAME"]
