"""Small helpers the chapters share. Not the subject of the book: comparing
two models, printing a comparison table, drawing a module tree."""
import torch


def _figures_at_twice_the_resolution():
    """In a notebook, store every figure as a PNG of twice its pixels
    ("retina"): the website still shows it at its size, now sharp on a
    phone, a retina screen and paper (about 200 ppi in the PDF), and a tap
    opens it at full size. A PNG, not an SVG: nbval leaves PNG outputs out
    of its comparison, and a curve's SVG coordinates could differ in the
    last digit from one CPU to another."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return
    from matplotlib_inline.backend_inline import set_matplotlib_formats

    set_matplotlib_formats("retina")


_figures_at_twice_the_resolution()


def error_of(fn, *args, **kwargs):
    """'TypeError: message' for what `fn(*args, **kwargs)` raises, or None.

    The book shows errors this way (never as a traceback) so stored outputs
    stay stable and the two backends can be compared as strings.
    """
    try:
        fn(*args, **kwargs)
    except Exception as e:  # any error: it is what we compare
        return f"{type(e).__name__}: {e}"
    return None


def table(headers, rows, width=None):
    """Print rows as an aligned plain-text table (cells longer than `width`
    are cut with "..."). Keep tables under 88 columns: the website's text
    column holds about that many, and the hygiene test enforces it."""
    rows = [[str(cell) for cell in row] for row in rows]
    if width:
        rows = [[c if len(c) <= width else c[: width - 3] + "..." for c in r]
                for r in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in rows))
              for i, h in enumerate(headers)]
    line = "  ".join(str(h).ljust(w) for h, w in zip(headers, widths))
    print(line.rstrip())
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())


def compare_errors(cases, mini, real, width=60):
    """Run each case on both backends, assert they raise the same type and
    message, and print one row per case with that shared error.

    `cases` maps a label to a function of one argument, the backend (the
    `mininn` or `torch.nn` module), that is expected to raise. The printed
    message is torch's and mininn's alike: a row is printed only after the
    two were compared in full (a long message is cut to `width` on screen).
    """
    rows = []
    for label, case in cases.items():
        ours, theirs = error_of(case, mini), error_of(case, real)
        assert theirs is not None, f"torch accepted {label!r}"
        assert ours == theirs, f"{label}:\n  mininn: {ours}\n  torch:  {theirs}"
        rows.append((label, theirs))
    table(["bad input", "torch.nn and mininn both raise"], rows, width=width)


def rounded(x, places):
    """`x` (a float or a one-element tensor) formatted to `places` decimals,
    after checking that no last-bit difference could change the digits.

    Stored outputs must print the same on every CPU and GPU. Kernels may
    disagree in the last bits (a float32 ulp is 6e-8 of the value, and a
    sum in another order costs a few), so a value closer to a rounding
    boundary than 1e-6 of itself (about 16 float32 ulps) is refused: print
    fewer places, or assert the exact claim and print a comparison.
    """
    x = float(x)
    scaled = abs(x) * 10 ** places
    distance = abs(scaled - (int(scaled) + 0.5))
    assert distance > 1e-6 * scaled + 1e-12, (
        f"{x!r} is too close to a rounding boundary at {places} places")
    return f"{x:.{places}f}"


@torch.no_grad()
def copy_weights(src, dst):
    """Copy every parameter and buffer of `src` into `dst`, by position.

    Works across backends (torch.nn -> mininn and back) and checks that the
    two models have the same names and shapes first.
    """
    pairs = [
        (src.named_parameters(), dst.named_parameters()),
        (src.named_buffers(), dst.named_buffers()),
    ]
    for a_items, b_items in pairs:
        a_items, b_items = list(a_items), list(b_items)
        assert [n for n, _ in a_items] == [n for n, _ in b_items]
        for (name, a), (_, b) in zip(a_items, b_items):
            assert a.shape == b.shape, f"{name}: {a.shape} vs {b.shape}"
            b.copy_(a)
    return dst


def same_tensors(a_items, b_items):
    """True when two (name, tensor) sequences match in names, order, values."""
    a_items, b_items = list(a_items), list(b_items)
    return [n for n, _ in a_items] == [n for n, _ in b_items] and all(
        a.dtype == b.dtype and torch.equal(a, b)
        for (_, a), (_, b) in zip(a_items, b_items)
    )


def inch_axes(width, height):
    """A figure of `width` x `height` inches whose axes count in inches, so
    that text drawn at 10 points prints at 10 points on the page."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1), xlim=(0, width), ylim=(-height, 0))
    ax.set_axis_off()
    return ax


def draw_module_tree(ax, model, numbers=None, x0=0.0, top=-0.3, size=10):
    """Draw `model`'s module tree (from `named_modules`) on `ax`, which
    counts in inches (see `inch_axes`), laid out as `print(model)` reads:
    one column per level from left to right, one row per leaf, each parent
    level with the middle of its children. `numbers` maps a module's name
    ("" for the root) to a label drawn in a dot beside its box, such as its
    place in a walk. Returns `ax`.
    """
    mods = dict(model.named_modules())
    kids = {n: [k for k in mods if k and k.rpartition(".")[0] == n]
            for n in mods}
    text = {n: f"{n.rpartition('.')[2] or 'root'}: {m._get_name()}"
            for n, m in mods.items()}
    x = {n: x0 + 0.35 for n in mods}
    for n in mods:  # a child starts right of its parent's box
        for k in kids[n]:
            x[k] = max(x[k], x[n] + 0.085 * size / 10 * len(text[n]) + 0.5)
    y, row = {}, 0
    for n in mods:  # pre-order, so the leaves come top to bottom
        if not kids[n]:
            y[n], row = top - 0.3 * row * size / 10, row + 1
    for n in reversed(list(mods)):
        if kids[n]:
            y[n] = (y[kids[n][0]] + y[kids[n][-1]]) / 2
    box = dict(boxstyle="round,pad=0.3", fc="#eef3fb", ec="#4a6fa5")
    dot = dict(boxstyle="circle,pad=0.2", fc="#fde7c8", ec="#c77800")
    for n in mods:
        for k in kids[n]:
            elbow = x[k] - 0.25
            ax.plot([x[n], elbow, elbow, x[k]], [y[n], y[n], y[k], y[k]],
                    color="0.6", lw=1, zorder=1)
        ax.text(x[n], y[n], text[n], size=size, va="center", bbox=box)
        if numbers:
            ax.text(x[n] - 0.12, y[n], numbers[n], size=size - 1,
                    ha="center", va="center", bbox=dot, zorder=3)
    return ax


def draw_flows(columns, figsize=(7.84, 4.8), fontsize=9):
    """Draw each `(title, steps)` of `columns` side by side: `steps` is a
    list of `(text, colour)`, drawn top to bottom as rounded boxes joined
    by arrows. Returns the figure."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(columns), figsize=figsize, squeeze=False)
    for ax, (title, steps) in zip(axes[0], columns):
        ax.set(xlim=(0, 1), ylim=(0, len(steps)))
        ax.axis("off")
        ax.set_title(title, fontsize=fontsize + 2)
        for i, (text, colour) in enumerate(steps):
            y = len(steps) - i - 0.5
            ax.text(0.5, y, text, ha="center", va="center", fontsize=fontsize,
                    bbox=dict(boxstyle="round,pad=0.4", fc=colour,
                              ec="#555555"))
            if i:  # an arrow from the box above
                ax.annotate("", xy=(0.5, y + 0.33), xytext=(0.5, y + 0.67),
                            arrowprops=dict(arrowstyle="->", color="#555555"))
    fig.tight_layout()
    return fig


def draw_decision_map(pairs, titles, figsize=(7.84, 5.2), fontsize=9):
    """Draw one row per `(problem, cure)` of `pairs`: a box for each, the
    problem on the left, an arrow to its cure on the right; `titles` head
    the two columns. Returns the figure."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figsize)
    ax.set(xlim=(0, 1), ylim=(0, len(pairs) + 0.6))
    ax.axis("off")
    for x, title in zip([0.22, 0.7], titles):
        ax.text(x, len(pairs) + 0.25, title, ha="center", va="center",
                fontsize=fontsize + 2, weight="bold")
    for i, (problem, cure) in enumerate(pairs):
        y = len(pairs) - i - 0.5
        for x, text, colour in [(0.22, problem, "#fce5cd"),
                                (0.7, cure, "#d9ead3")]:
            ax.text(x, y, text, ha="center", va="center", fontsize=fontsize,
                    bbox=dict(boxstyle="round,pad=0.4", fc=colour,
                              ec="#555555"))
        ax.annotate("", xy=(0.48, y), xytext=(0.40, y),
                    arrowprops=dict(arrowstyle="->", color="#555555"))
    fig.tight_layout()
    return fig


def mapped_file(tensor):
    """The name of the file whose memory map holds `tensor`'s data, or None
    when the data is the process's own memory (heap, anonymous). Reads
    /proc/self/maps, the kernel's list of mappings: Linux only."""
    import os

    address = tensor.data_ptr()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            low, high = (int(a, 16) for a in fields[0].split("-"))
            if low <= address < high:
                where = fields[5].strip() if len(fields) > 5 else ""
                return (os.path.basename(where) if where.startswith("/")
                        else None)
    return None


def draw_reference_paths(paths, holders=("optimizer", "tied layer",
                                         "hook closure"),
                         slot="_parameters\n['weight']", figsize=(7.84, 3.3),
                         fontsize=9):
    """Draw one panel per `(title, held, colour, follows, note)` of `paths`:
    the box `slot` points at the box `held`; each of `holders` points at it
    too when `follows`, else at a grey "old object" box below it; `note` is
    written in italics under the panel. Returns the figure."""
    import matplotlib.pyplot as plt

    plain = dict(boxstyle="round,pad=0.3", fc="white", ec="gray")
    fig, axes = plt.subplots(1, len(paths), figsize=figsize, squeeze=False)
    for ax, (title, held, colour, follows, note) in zip(axes[0], paths):
        ax.set(xlim=(0, 10), ylim=(0, 10))
        ax.set_axis_off()
        ax.set_title(title, fontsize=fontsize + 1)
        top = ax.text(7.3, 9.0, slot, fontsize=fontsize, ha="center",
                      va="center", bbox=plain)
        target = ax.text(7.3, 5.6, held, fontsize=fontsize, ha="center",
                         va="center", bbox=dict(boxstyle="round,pad=0.4",
                                                fc=colour, ec=colour,
                                                alpha=0.3))
        # arrows run between the boxes' edges (coordinates relative to each
        # text; shrink clears the padding), never over their words
        edges = dict(shrinkA=5, shrinkB=6)
        ax.annotate("", xy=(0.5, 1), xycoords=target, xytext=(0.5, 0),
                    textcoords=top, arrowprops=dict(arrowstyle="->", **edges))
        arrow = colour
        if not follows:  # the holders keep the old object
            target = ax.text(7.3, 2.6, "old object,\nold data",
                             fontsize=fontsize, ha="center", va="center",
                             bbox=dict(boxstyle="round,pad=0.4", fc="#ddd",
                                       ec="gray"))
            arrow = "gray"
        for i, name in enumerate(holders):
            y = 8.2 - 2.3 * i
            holder = ax.text(1.7, y, name, fontsize=fontsize, ha="center",
                             va="center", bbox=plain)
            ax.annotate("", xy=(0, 0.5), xycoords=target, xytext=(1, 0.5),
                        textcoords=holder,
                        arrowprops=dict(arrowstyle="->", color=arrow, **edges))
        ax.text(5, 0.4, note, fontsize=fontsize, ha="center", style="italic")
    fig.tight_layout()
    return fig


# every place torch 2.13 keeps an fp32_precision setting (backend, op)
FP32_SETTINGS = [("generic", "all"), ("cuda", "all"), ("cuda", "matmul"),
                 ("cuda", "conv"), ("cuda", "rnn"), ("mkldnn", "all"),
                 ("mkldnn", "matmul"), ("mkldnn", "conv"), ("mkldnn", "rnn")]


def fp32_precision_state():
    """What every fp32_precision setting reads now, and what the old API
    reads (`get_float32_matmul_precision()`, `cudnn.allow_tf32`; None
    where a mix of the two APIs makes torch refuse to answer)."""
    state = {key: torch._C._get_fp32_precision_getter(*key)
             for key in FP32_SETTINGS}
    legacy = {"legacy matmul": torch.get_float32_matmul_precision,
              "legacy cudnn": lambda: torch.backends.cudnn.allow_tf32}
    for name, read in legacy.items():
        try:
            state[name] = read()
        except RuntimeError:
            state[name] = None
    return state


class fp32_precision_restored:
    """`with fp32_precision_restored():` puts every TF32 setting back as
    it read before the block (they are global to the process), then
    asserts that they read the same again."""

    def __enter__(self):
        self.saved = fp32_precision_state()
        return self.saved

    def __exit__(self, *exc):
        # the old setters write new-API settings too, so they go first
        if self.saved["legacy matmul"] is not None:
            torch.set_float32_matmul_precision(self.saved["legacy matmul"])
        if self.saved["legacy cudnn"] is not None:
            torch.backends.cudnn.allow_tf32 = self.saved["legacy cudnn"]
        for key in FP32_SETTINGS:  # parents first: a child keeps its own
            torch._C._set_fp32_precision_setter(*key, self.saved[key])
        now = fp32_precision_state()
        assert now == self.saved, f"not restored: {self.saved} -> {now}"
        return False


def set_first_weight(layers, value=42.0):
    """Write `value` into the first element of each layer's `weight`, in
    place: the work of a worker process in chapter 6 (a function of a
    module, so that a `spawn`ed process can import it)."""
    with torch.no_grad():
        for layer in layers:
            layer.weight.view(-1)[0] = value
