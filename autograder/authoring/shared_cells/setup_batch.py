n = batch_size  # a shorter name, used in the formulas below
ix = torch.randint(0, Xtr.shape[0], (batch_size,), generator=g)
Xb, Yb = Xtr[ix], Ytr[ix]
# Neuron 0 gets a batch variance equal to BatchNorm's epsilon (1e-5), so that the epsilon matters in its gradient.
# Its batch mean is made as small as its spread (b1[0]), so a variance taken as E[x**2] - E[x]**2 keeps its precision.
with torch.no_grad():
    W1[:, 0] *= (1e-5 / (C[Xb].view(n, -1) @ W1[:, 0]).var()) ** 0.5
    b1[0] = 1e-5**0.5 - (C[Xb].view(n, -1) @ W1[:, 0]).mean()
