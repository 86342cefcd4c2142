# The forward pass, cut into small steps so that each one has a gradient you can write by hand.
emb = C[Xb]  # (n, block_size, n_embd): the embedding of every context character
embcat = emb.view(emb.shape[0], -1)  # (n, block_size * n_embd): concatenated
# Linear layer 1
hprebn = embcat @ W1 + b1  # (n, n_hidden): hidden layer before BatchNorm
# BatchNorm
bnmeani = 1 / n * hprebn.sum(0, keepdim=True)
bndiff = hprebn - bnmeani
bndiff2 = bndiff**2
bnvar = 1 / (n - 1) * bndiff2.sum(0, keepdim=True)  # Bessel's correction: divide by n-1, not n
bnvar_inv = (bnvar + 1e-5) ** -0.5
bnraw = bndiff * bnvar_inv
hpreact = bngain * bnraw + bnbias
# Non-linearity
h = torch.tanh(hpreact)  # (n, n_hidden)
# Linear layer 2
logits = h @ W2 + b2  # (n, vocab_size)
# Cross-entropy loss, the same as F.cross_entropy(logits, Yb)
logit_maxes = logits.max(1, keepdim=True).values
norm_logits = logits - logit_maxes  # subtract the max for numerical stability
counts = norm_logits.exp()
counts_sum = counts.sum(1, keepdim=True)
counts_sum_inv = counts_sum**-1  # rather than 1.0 / counts_sum, so that the backward pass can be bit-exact
probs = counts * counts_sum_inv
logprobs = probs.log()
loss = -logprobs[range(n), Yb].mean()

# PyTorch's backward pass, kept for checking your answers
for p in parameters:
    p.grad = None
for t in [logprobs, probs, counts, counts_sum, counts_sum_inv, norm_logits, logit_maxes, logits, h,
          hpreact, bnraw, bnvar_inv, bnvar, bndiff2, bndiff, hprebn, bnmeani, embcat, emb]:
    t.retain_grad()
loss.backward()
print(f"loss {loss.item():.4f}")
