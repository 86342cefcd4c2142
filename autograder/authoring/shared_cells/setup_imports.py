import hashlib
import os
import random
import urllib.request

import torch
import torch.nn.functional as F
