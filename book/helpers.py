"""Small helpers the chapters share. Not the subject of the book: comparing
two models, printing a comparison table, drawing a module tree."""
import os
import warnings

import torch

# The language the figures are drawn in. Every word a figure shows goes
# through figure_text(), so that the same cells draw the Chinese edition's
# figures when BOOK_LANGUAGE=zh_CN (site/figures.py runs the chapters so).
LANGUAGE = os.environ.get("BOOK_LANGUAGE", "en")


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


def _figures_in_chinese():
    """Hanzi from WenQuanYi Micro Hei (Debian's fonts-wqy-microhei, which
    .ci/install-browser installs), Latin letters and code from matplotlib's
    own DejaVu Sans: matplotlib takes each glyph from the first family
    that has it. A glyph no family has would print as an empty box, so
    that is an error here, not matplotlib's warning."""
    import matplotlib

    matplotlib.rcParams["font.family"] = ["DejaVu Sans",
                                          "WenQuanYi Micro Hei"]
    warnings.filterwarnings("error", r"Glyph .* missing from font")


if LANGUAGE != "en":
    _figures_in_chinese()


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
    text = {n: f"{n.rpartition('.')[2] or figure_text('root')}: {m._get_name()}"
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


def draw_flows(columns, figsize=(7.84, 4.8), fontsize=9, narrow=False):
    """Draw each `(title, steps)` of `columns` side by side: `steps` is a
    list of `(text, colour)`, drawn top to bottom as rounded boxes joined
    by arrows (the words through figure_text()). `narrow`: for a phone,
    one column under the other. Returns the figure."""
    import matplotlib.pyplot as plt

    if narrow:
        figsize, fontsize = (3.3, 4.4 * len(columns)), fontsize - 1
    fig, axes = plt.subplots(*(1, len(columns)) if not narrow
                             else (len(columns), 1), figsize=figsize,
                             squeeze=False)
    for ax, (title, steps) in zip(axes.flat, columns):
        ax.set(xlim=(0, 1), ylim=(0, len(steps)))
        ax.axis("off")
        ax.set_title(figure_text(title), fontsize=fontsize + 2)
        for i, (text, colour) in enumerate(steps):
            y = len(steps) - i - 0.5
            ax.text(0.5, y, figure_text(text), ha="center", va="center",
                    fontsize=fontsize, bbox=dict(boxstyle="round,pad=0.4",
                                                 fc=colour, ec="#555555"))
            if i:  # an arrow from the box above
                ax.annotate("", xy=(0.5, y + 0.33), xytext=(0.5, y + 0.67),
                            arrowprops=dict(arrowstyle="->", color="#555555"))
    fig.tight_layout()
    return fig


def draw_decision_map(pairs, titles, figsize=(7.84, 5.2), fontsize=9,
                      narrow=False):
    """Draw one row per `(problem, cure)` of `pairs`: a box for each, the
    problem on the left, an arrow to its cure on the right; `titles` head
    the two columns (the words through figure_text()). `narrow`: for a phone,
    each cure under its problem. Returns the figure."""
    import matplotlib.pyplot as plt

    pairs = [(figure_text(problem), figure_text(cure)) for problem, cure in pairs]
    titles = [figure_text(title) for title in titles]
    if narrow:
        return _decision_map_narrow(pairs, titles, fontsize - 0.5)
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


def _decision_map_narrow(pairs, titles, fontsize):
    """draw_decision_map for a phone: 3.3 inches wide (about 340 px), each
    problem above an arrow down to its cure."""
    ax = inch_axes(3.3, 0.45 + 1.08 * len(pairs))
    ax.text(1.65, -0.2, f"{titles[0]}  \u2192  {titles[1]}", ha="center",
            va="center", fontsize=fontsize + 1, weight="bold")
    for i, (problem, cure) in enumerate(pairs):
        y = -0.62 - 1.08 * i
        for dy, text, colour in [(0, problem, "#fce5cd"),
                                 (-0.56, cure, "#d9ead3")]:
            ax.text(1.65, y + dy, text, ha="center", va="center",
                    fontsize=fontsize, bbox=dict(boxstyle="round,pad=0.35",
                                                 fc=colour, ec="#555555"))
        ax.annotate("", xy=(1.65, y - 0.36), xytext=(1.65, y - 0.2),
                    arrowprops=dict(arrowstyle="->", color="#555555"))
    return ax.figure


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
                         fontsize=9, narrow=False):
    """Draw one panel per `(title, held, colour, follows, note)` of `paths`:
    the box `slot` points at the box `held`; each of `holders` points at it
    too when `follows`, else at a grey "old object" box below it; `note` is
    written in italics under the panel (the words through figure_text()).
    `narrow`: for a phone, the panels one under another. Returns the
    figure."""
    import matplotlib.pyplot as plt

    plain = dict(boxstyle="round,pad=0.3", fc="white", ec="gray")
    shape = (1, len(paths)) if not narrow else (len(paths), 1)
    if narrow:
        figsize = (2.9, 3.1 * len(paths))
    fig, axes = plt.subplots(*shape, figsize=figsize, squeeze=False)
    for ax, (title, held, colour, follows, note) in zip(axes.flat, paths):
        title, held, note = figure_text(title), figure_text(held), figure_text(note)
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
            target = ax.text(7.3, 2.6, figure_text("old object,\nold data"),
                             fontsize=fontsize, ha="center", va="center",
                             bbox=dict(boxstyle="round,pad=0.4", fc="#ddd",
                                       ec="gray"))
            arrow = "gray"
        for i, name in enumerate(holders):
            y = 8.2 - 2.3 * i
            holder = ax.text(1.7, y, figure_text(name), fontsize=fontsize, ha="center",
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


# --------------------------------------------------------------------------
# The words of the figures, by language: figure_text("yes") is "yes" in the
# English edition and "是" in the Chinese one. Code (names, calls) is the
# same in both and is listed as itself, so a word missing from the table
# is a KeyError when the Chinese figures are drawn, never English left in.

CODE_IN_FIGURES = [
    "torch.nn", "mininn", "Grad-CAM", "Sin", "Mul", "w.grad", "x.grad", "x", "y",
    "AccumulateGrad", "named_parameters", "state_dict", "load_state_dict",
    'torch.load(..., map_location="cpu")', "SGD -> Adam",
    ".to(float64) and back",
]

LABELS = {"zh_CN": {
    **{code: code for code in CODE_IN_FIGURES},
    # chapter 1: the routes of __setattr__
    "yes": "是", "no": "否",
    "1. a Parameter, or a\nname in _parameters?":
        "1. 是 Parameter，或名字\n已在 _parameters 中？",
    "2. a Module, or a\nname in _modules?":
        "2. 是 Module，或名字\n已在 _modules 中？",
    "3. a Buffer, or a\nname in _buffers?":
        "3. 是 Buffer，或名字\n已在 _buffers 中？",
    "Parameter: forget the name\nelsewhere, register_parameter\n"
    "None: keeps the slot":
        "Parameter：从别处删去该名字，\nregister_parameter\n"
        "None：保留槽位",
    "Module: forget the name\nelsewhere, store in _modules\n"
    "None: keeps the slot":
        "Module：从别处删去该名字，\n存入 _modules\nNone：保留槽位",
    "register_buffer\n(keeps the persistence,\nunless a Buffer says otherwise)":
        "register_buffer\n（保持原有的持久性，\n除非 Buffer 另有指定）",
    "before __init__: AttributeError\nnon-leaf Parameter: ValueError\n"
    "anything else: TypeError":
        "__init__ 之前：AttributeError\n非叶子的 Parameter：ValueError\n"
        "其他值：TypeError",
    "before __init__: AttributeError\nanything else: TypeError":
        "__init__ 之前：AttributeError\n其他值：TypeError",
    "before __init__: AttributeError\nnot a tensor or None: TypeError":
        "__init__ 之前：AttributeError\n不是张量也不是 None：TypeError",
    "4. plain attribute:\nobject.__setattr__\ninto __dict__":
        "4. 普通属性：\nobject.__setattr__\n存入 __dict__",
    # chapter 2: walks of the module tree
    "root": "根",
    "pre-order: named_modules(), train()":
        "前序遍历：named_modules()、train()",
    "post-order: apply(fn)": "后序遍历：apply(fn)",
    "AlexNet, from mininn's named_modules()":
        "AlexNet，来自 mininn 的 named_modules()",
    # chapter 3: the call chain
    "you write": "你写的", "your code": "你的代码",
    "torch: the compiled\npath branches here": "torch：编译路径\n从这里分出",
    "chapter 5:\nhooks run here": "第 5 章：\n钩子在这里运行",
    "skips both middle boxes, and every hook run there":
        "跳过中间两个方框，以及在那里运行的每个钩子",
    # chapter 4: Sequential's keys
    "torch: del renumbers, insert shifts from the end":
        "torch：del 重新编号，insert 从末尾起依次后移",
    "a delete that leaves a gap: append overwrites":
        "留下空位的删除：append 会覆盖",
    "gone: ": "已移除：",
    # chapter 5: hooks
    "input": "输入", "channel {}": "通道 {}",
    "Tanh at [{}]": "[{}] 处的 Tanh",
    "std of each Tanh: {}": "每个 Tanh 的标准差：{}",
    "default init": "默认初始化", "Xavier, tanh gain": "Xavier，tanh 增益",
    "training step": "训练步", "training loss": "训练损失",
    "IN\nidentity": "IN\n恒等节点", "OUT\nidentity": "OUT\n恒等节点",
    "the module's\noperations": "模块的\n运算",
    "grad_input": "grad_input", "grad_output": "grad_output",
    "grad of y": "y 的梯度", "forward": "前向", "backward": "反向",
    "backward hooks see grad_input\n(and may replace it)":
        "反向钩子看到 grad_input\n（并可替换它）",
    "backward pre-hooks see grad_output\n(and may replace it)":
        "反向预钩子看到 grad_output\n（并可替换它）",
    "your hooks": "你的钩子", "identity nodes": "恒等节点",
    "module's ops": "模块的运算",
    "pre-hook": "预钩子", "hook": "钩子", "OUT node": "OUT 节点",
    "IN node": "IN 节点",
    "order of execution in one backward pass": "一次反向传播中的执行顺序",
    "saliency (x.grad)": "显著图（x.grad）", "map {}": "特征图 {}",
    "gradient {}": "梯度 {}",
    "{}: a bar from the pre-hook to the hook": "{}：从预钩子到钩子的一条横条",
    "order of the module hooks": "模块钩子的顺序",
    "model": "模型", "children": "直接子模块", "grandchildren": "孙模块",
    # chapter 6: the three paths of _apply
    "optimizer": "优化器", "tied layer": "绑定的层", "hook closure": "钩子闭包",
    "old object,\nold data": "旧对象，\n旧数据",
    ".data = (default)": ".data =（默认）",
    "new Parameter\n(meta, overwrite flag)": "新的 Parameter\n（meta，覆盖标志）",
    "swap_tensors\n(swap flag, DTensor)": "swap_tensors\n（交换标志，DTensor）",
    "same object,\nnew data": "同一对象，\n新数据", "a new object": "一个新对象",
    "same object,\nswapped contents": "同一对象，\n内容已交换",
    "its grad: .data = too": "它的梯度：同样 .data =",
    "its grad: a new tensor": "它的梯度：一个新张量",
    "its grad: swapped too": "它的梯度：同样被交换",
    # chapter 7: the keys of state_dict and load_state_dict
    "saving: state_dict": "保存：state_dict",
    "loading: load_state_dict": "加载：load_state_dict",
    'state_dict() on the root, prefix ""': '在根模块上调用 state_dict()，前缀 ""',
    '_metadata[""] = {version: 1}\npre-hooks, then its own tensors':
        '_metadata[""] = {version: 1}\n先运行预钩子，再保存自己的张量',
    'child 0 (Linear), prefix "0."\n_metadata["0"]; 0.weight, 0.bias':
        '子模块 0（Linear），前缀 "0."\n_metadata["0"]；0.weight、0.bias',
    'child 1 (BatchNorm1d), prefix "1."\n_metadata["1"] = {version: 2}; '
    "1.weight ...":
        '子模块 1（BatchNorm1d），前缀 "1."\n_metadata["1"] = {version: 2}；'
        "1.weight ……",
    "post-hooks: each module's after\nits children's, the root's last":
        "后置钩子：每个模块的在其子模块\n之后运行，根模块的最后运行",
    "one OrderedDict: keys in that order,\n._metadata one entry per module":
        "一个 OrderedDict：键按此顺序，\n._metadata 每个模块一项",
    "load_state_dict(sd, strict)\ncopy sd (hooks may edit the copy)":
        "load_state_dict(sd, strict)\n复制 sd（钩子可以修改副本）",
    "root: _load_from_state_dict(all keys,\n"
    '_metadata[""]): pre-hooks, own tensors':
        "根模块：_load_from_state_dict（全部键，\n"
        '_metadata[""]）：预钩子，自己的张量',
    'child 0 gets only the keys\nthat start with "0." (its slice)':
        '子模块 0 只拿到以 "0." 开头的键\n（属于它的那一段）',
    'child 1: keys under "1."; a version\nbelow 2 gets num_batches_tracked':
        '子模块 1："1." 下的键；版本低于 2\n时补上 num_batches_tracked',
    "post-hooks, children first: may edit\nmissing_keys, unexpected_keys":
        "后置钩子，子模块先运行：可以修改\nmissing_keys、unexpected_keys",
    "strict decided here, once: raise every\nproblem together, or return the "
    "keys":
        "strict 在这里一次性决定：把所有问题\n一起报错，或者返回这些键",
    # chapter 8: which fix for my checkpoint
    "your checkpoint": "你的检查点", "what to use": "该用什么",
    "UnpicklingError:\nWeights only load failed":
        "UnpicklingError：\nWeights only load failed",
    "a whole model or a class of yours:\nsafe_globals([...]), if you trust it":
        "整个模型或你自己的类：\n若信任它，用 safe_globals([...])",
    "saved on a GPU,\nno GPU here": "在 GPU 上保存，\n这里没有 GPU",
    "keys start with module.\n(DataParallel, DDP)":
        "键以 module. 开头\n（DataParallel、DDP）",
    'consume_prefix_in_state_dict_if_present\n(state_dict, "module.")':
        'consume_prefix_in_state_dict_if_present\n(state_dict, "module.")',
    "keys start with _orig_mod.\n(torch.compile)":
        "键以 _orig_mod. 开头\n（torch.compile）",
    'the same, with "_orig_mod."': '同上，前缀换成 "_orig_mod."',
    "a new head: some\nshapes differ": "换了新的输出头：\n有些形状不同",
    "keep the keys whose shapes fit,\nload with strict=False":
        "保留形状相符的键，\n用 strict=False 加载",
    "too big to build twice": "大到无法构建两次",
    "mmap=True, the meta device, assign=True;\nre-tie shared weights":
        "mmap=True、meta 设备、assign=True；\n重新绑定共享的权重",
    "resume training exactly": "精确地恢复训练",
    "optimizer, scheduler, GradScaler, RNG;\n.train() or .eval() after the load":
        "优化器、调度器、GradScaler、随机数状态；\n加载后调用 .train() 或 .eval()",
    # chapter 9: the capstone
    "horizontal": "横条纹", "vertical": "竖条纹", "diagonal": "斜条纹",
    "checkerboard": "棋盘格",
    "torch.nn, resumed from mininn's file": "torch.nn，从 mininn 的文件恢复",
    "mininn, resumed from torch's file": "mininn，从 torch 的文件恢复",
    "checkpoint": "检查点", "step": "步", "cross-entropy loss": "交叉熵损失",
    "The same network, trained with torch.nn and with mininn":
        "同一个网络，分别用 torch.nn 和 mininn 训练",
    # chapter 10: performance
    "build the deep model": "构建深层模型",
    "call, no hooks": "调用，无钩子", "call, two forward hooks": "调用，两个前向钩子",
    "named_modules, wide tree": "named_modules，宽树",
    "mininn time / torch.nn time (dot: median, bar: quartiles)":
        "mininn 耗时 / torch.nn 耗时（点：中位数，横条：四分位数）",
    "mininn time / torch.nn time\n(dot: median, bar: quartiles)":
        "mininn 耗时 / torch.nn 耗时\n（点：中位数，横条：四分位数）",
    "Left of the dotted line, mininn is faster; "
    "the black tick is the row's target":
        "虚线左侧表示 mininn 更快；黑色刻度是该行的目标",
    "Left of the dotted line, mininn is faster;\n"
    "the black tick is the row's target":
        "虚线左侧表示 mininn 更快；\n黑色刻度是该行的目标",
    "F.linear (the math)": "F.linear（计算本身）",
    "forward: method call, 2 lookups": "forward：方法调用，2 次查找",
    "call: hook checks": "调用：钩子检查",
    "ns per call of a 1 x 1 Linear (median; whiskers: quartiles)":
        "1 x 1 Linear 每次调用的纳秒数（中位数；误差线：四分位数）",
}}


def figure_text(text):
    """`text`, a word or sentence a figure shows, in the language the
    figures are drawn in (LANGUAGE); a label with `{}` is formatted
    afterwards: figure_text("channel {}").format(3)."""
    if LANGUAGE == "en":
        return text
    return LABELS[LANGUAGE][text]


SETATTR_ROUTES = [  # (the question, where "yes" goes, the errors there)
    ("1. a Parameter, or a\nname in _parameters?",
     "Parameter: forget the name\nelsewhere, register_parameter\n"
     "None: keeps the slot", "before __init__: AttributeError\n"
     "non-leaf Parameter: ValueError\nanything else: TypeError"),
    ("2. a Module, or a\nname in _modules?",
     "Module: forget the name\nelsewhere, store in _modules\n"
     "None: keeps the slot", "before __init__: AttributeError\n"
     "anything else: TypeError"),
    ("3. a Buffer, or a\nname in _buffers?", "register_buffer\n"
     "(keeps the persistence,\nunless a Buffer says otherwise)",
     "before __init__: AttributeError\nnot a tensor or None: TypeError"),
]


def draw_setattr_routes(narrow=False):
    """Chapter 1's decision diagram of `Module.__setattr__`: three
    questions down the left, the first "yes" leading right to its route
    (green) and that route's errors (red); three noes end in the fourth
    route, a plain attribute. `narrow`: for a phone, each route's errors
    under it rather than beside it. Returns the figure."""
    question = dict(boxstyle="round,pad=0.4", fc="#eef3fb", ec="#4a6fa5")
    store = dict(boxstyle="round,pad=0.4", fc="#e8f4ea", ec="#3f8f4f")
    error = dict(boxstyle="round,pad=0.4", fc="#fbeaea", ec="#b04040")
    # where things go, in inches: wide, three columns; narrow, two
    size, step, (qx, sx, ex) = ((9.5, 1.45, (1.45, 4.35, 7.6)) if not narrow
                                else (7, 1.85, (0.68, 2.3, 2.3)))
    ax = inch_axes(8.4 if not narrow else 3.3, 1.45 + 3 * step)
    edges = dict(shrinkA=4, shrinkB=4)

    def arrow(start, end, at=None, **style):
        at = at or ((1, 0.5), (0, 0.5))
        ax.annotate("", xy=at[1], xycoords=end, xytext=at[0],
                    textcoords=start, arrowprops=dict(arrowstyle="-|>",
                                                      **edges, **style))

    down = ((0.5, 0), (0.5, 1))
    above = ax.text(qx, -0.3, "self.name = value", ha="center", va="center",
                    fontsize=size, bbox=dict(boxstyle="square,pad=0.3",
                                             fc="white", ec="0.3"))
    for i, (ask, route, errors) in enumerate(SETATTR_ROUTES):
        y = -1.0 - i * step
        asked = ax.text(qx, y, figure_text(ask), ha="center", va="center",
                        fontsize=size, bbox=question)
        arrow(above, asked, down)
        if i:  # the "no" of the question above
            ax.text(qx + 0.08, y + step / 2, figure_text("no"), fontsize=size - 0.5,
                    va="center")
        # narrow: the route under the question, to its right
        done = ax.text(sx, y if not narrow else y - 0.55, figure_text(route),
                       ha="center", va="center", fontsize=size, bbox=store)
        if not narrow:
            arrow(asked, done)
        else:
            arrow(asked, done, ((1, 0.5), (0.5, 1)),
                  connectionstyle="angle,angleA=0,angleB=90,rad=0")
        ax.text((qx + sx) / 2 + (0.05 if not narrow else 0.2), y + 0.04,
                figure_text("yes"), fontsize=size - 0.5, ha="center", va="bottom")
        failed = ax.text(ex, y if not narrow else y - 1.3, figure_text(errors),
                         ha="center", va="center", fontsize=size, bbox=error)
        arrow(done, failed, None if not narrow else down, color="#b04040",
              ls="--")
        above = asked
    plain = ax.text(qx, -1.0 - 3 * step, figure_text(
        "4. plain attribute:\nobject.__setattr__\ninto __dict__"),
        ha="center", va="center", fontsize=size, bbox=store)
    arrow(above, plain, down)
    ax.text(qx + 0.08, -1.0 - 2.5 * step, figure_text("no"), fontsize=size - 0.5,
            va="center")
    return ax.figure


def draw_ratios(results, narrow=False):
    """Chapter 10's ratios: one row per workload of `results` (bench.Result),
    a dot at its median ratio of mininn time over torch.nn time, a bar
    across its quartiles (red when it missed its target), a black tick at
    its target, a dotted line at 1. `narrow`: for a phone. Returns the
    figure."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.8) if not narrow else (3.3, 5.0))
    rows = results[::-1]  # the first workload at the top
    for y, r in enumerate(rows):
        colour = "#4a6fa5" if r.met else "#c8553d"
        ax.plot([r.low, r.high], [y, y], color=colour, lw=3, alpha=0.5,
                solid_capstyle="round")
        ax.plot(r.ratio, y, "o", color=colour, ms=7)
        if r.target is not None:
            ax.plot(r.target, y, "|", color="k", ms=16, mew=2)
    ax.axvline(1.0, color="0.5", lw=1, ls=":")
    names = [figure_text(r.name) for r in rows]
    if not narrow:
        ax.set_yticks(range(len(rows)), names)
    else:  # each name above its row, so the rows get the whole width
        ax.set_yticks([])
        ax.set_ylim(-0.5, len(rows) - 0.1)
        for y, name in enumerate(names):
            ax.text(0.02, y + 0.22, name, fontsize=8, va="bottom",
                    transform=ax.get_yaxis_transform())
    if narrow:
        ax.tick_params(axis="x", labelsize=8)
        ax.set_xlabel(figure_text("mininn time / torch.nn time\n"
                            "(dot: median, bar: quartiles)"), fontsize=8)
        ax.set_title(figure_text("Left of the dotted line, mininn is faster;\n"
                           "the black tick is the row's target"), fontsize=9)
    else:
        ax.set_xlabel(figure_text("mininn time / torch.nn time (dot: median, "
                            "bar: quartiles)"))
        ax.set_title(figure_text("Left of the dotted line, mininn is faster; "
                           "the black tick is the row's target"), fontsize=10)
    fig.tight_layout()
    return fig
