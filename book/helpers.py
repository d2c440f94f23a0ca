"""Small helpers the chapters share. Not the subject of the book: comparing
two models, printing a comparison table, drawing a module tree."""
import torch


def error_of(fn, *args, **kwargs):
    """'TypeError: message' for what `fn(*args, **kwargs)` raises, or None.

    The book shows errors this way (never as a traceback) so stored outputs
    stay stable and the two backends can be compared as strings.
    """
    try:
        fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the error is what we compare
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


def draw_module_tree(model, title=None, ax=None):
    """Draw `model`'s module tree (from `named_modules`) with matplotlib.

    Leaves sit in one row at the bottom; each parent is centred over its
    children. Returns the matplotlib Axes.
    """
    import matplotlib.pyplot as plt

    names = [name for name, _ in model.named_modules()]
    kind = {name: type(m).__name__ for name, m in model.named_modules()}
    kids = {name: [] for name in names}
    for name in names[1:]:
        kids[name.rpartition(".")[0]].append(name)
    depth = {name: 0 if not name else name.count(".") + 1 for name in names}
    x, leaves = {}, 0

    def place(name):
        nonlocal leaves
        if not kids[name]:
            x[name], leaves = leaves, leaves + 1
        else:
            for kid in kids[name]:
                place(kid)
            x[name] = (x[kids[name][0]] + x[kids[name][-1]]) / 2

    place("")
    if ax is None:
        levels = max(depth.values()) + 1
        _, ax = plt.subplots(figsize=(max(6, leaves * 0.75), 1.4 * levels + 0.5))
    for name in names:
        for kid in kids[name]:
            ax.plot([x[name], x[kid]], [-depth[name], -depth[kid]],
                    color="0.6", lw=1, zorder=1)
    for name in names:
        label = (name.rpartition(".")[2] or "root") + "\n" + kind[name]
        ax.text(x[name], -depth[name], label, ha="center", va="center",
                fontsize=7, zorder=2,
                bbox=dict(boxstyle="round,pad=0.3", fc="#eef3fb", ec="#4a6fa5"))
    ax.set_axis_off()
    ax.margins(x=0.04, y=0.15)
    if title:
        ax.set_title(title)
    return ax
