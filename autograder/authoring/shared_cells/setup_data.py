# names.txt: 32,033 names from the makemore repository (MIT licence).
# It is read from beside this notebook, or from $BACKPROP_NINJA_NAMES, and downloaded once if missing.
NAMES_URL = "https://raw.githubusercontent.com/karpathy/makemore/master/names.txt"
NAMES_SHA256 = "0a30b5557f192f32ab962680889aac5f6fda0f4cecf40a6d0b5694f58ea8cc4d"
names_path = os.environ.get("BACKPROP_NINJA_NAMES", "names.txt")
if not os.path.exists(names_path):
    print(f"downloading {NAMES_URL} ...")
    try:
        with urllib.request.urlopen(NAMES_URL, timeout=30) as response:
            downloaded = response.read()
    except OSError as error:
        raise RuntimeError(
            f"names.txt is not next to this notebook and could not be downloaded ({error}).\n"
            f"Download it yourself from {NAMES_URL} and put it next to the notebook."
        ) from None
    if hashlib.sha256(downloaded).hexdigest() != NAMES_SHA256:
        raise RuntimeError(f"The file downloaded from {NAMES_URL} is not the expected names.txt.")
    with open(names_path, "wb") as f:
        f.write(downloaded)
with open(names_path, "rb") as f:
    names_bytes = f.read()
if hashlib.sha256(names_bytes).hexdigest() != NAMES_SHA256:
    raise RuntimeError(f"{names_path} is not the expected names.txt: delete it and run this cell again.")
words = names_bytes.decode("utf-8").splitlines()
print(f"{len(words)} names, e.g. {words[:5]}")
