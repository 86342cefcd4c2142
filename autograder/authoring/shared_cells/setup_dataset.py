# The vocabulary: '.' (index 0) marks the start and the end of a name, then a..z.
chars = sorted(set("".join(words)))
stoi = {ch: i + 1 for i, ch in enumerate(chars)}
stoi["."] = 0
itos = {i: ch for ch, i in stoi.items()}
vocab_size = len(itos)
block_size = 3  # characters of context used to predict the next one


def build_dataset(words):
    # X: every context, one after another; .view makes them rows of block_size (3x faster than a list of lists)
    X, Y = [], []
    for w in words:
        context = [0] * block_size
        for ch in w + ".":
            ix = stoi[ch]
            X.extend(context)
            Y.append(ix)
            context = context[1:] + [ix]
    return torch.tensor(X).view(-1, block_size), torch.tensor(Y)


# An 80/10/10 split of the shuffled names into training, validation and test sets.
random.seed(42)
shuffled = words[:]
random.shuffle(shuffled)
n1, n2 = int(0.8 * len(shuffled)), int(0.9 * len(shuffled))
Xtr, Ytr = build_dataset(shuffled[:n1])
Xdev, Ydev = build_dataset(shuffled[n1:n2])
Xte, Yte = build_dataset(shuffled[n2:])
print(f"vocabulary {vocab_size}, train {tuple(Xtr.shape)}, val {tuple(Xdev.shape)}, test {tuple(Xte.shape)}")
