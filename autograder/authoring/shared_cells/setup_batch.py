n = batch_size  # a shorter name, used in the formulas below
# No example of the batch holds the last character ("z"), so that F.one_hot without num_classes (as wide as the
# largest index it is given) has fewer columns than vocab_size here, as on most batches.
rows = torch.nonzero((Xtr < vocab_size - 1).all(1) & (Ytr < vocab_size - 1))[:, 0]
ix = rows[torch.randint(0, rows.shape[0], (batch_size,), generator=g)]
Xb, Yb = Xtr[ix], Ytr[ix]
# Neuron 0 gets a batch variance equal to BatchNorm's epsilon (1e-5), so that the epsilon matters in its gradient.
# Its batch mean is made as small as its spread (b1[0]), so a variance taken as E[x**2] - E[x]**2 keeps its precision.
with torch.no_grad():
    W1[:, 0] *= (1e-5 / (C[Xb].view(n, -1) @ W1[:, 0]).var()) ** 0.5
    b1[0] = 1e-5**0.5 - (C[Xb].view(n, -1) @ W1[:, 0]).mean()
