import hashlib
import os
import random
import urllib.request

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
