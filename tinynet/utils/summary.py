"""The text of ``Sequential.summary()``: Keras 3's table, reproduced byte for byte.

Keras 3 (``keras/src/utils/summary_utils.py``) renders the summary as a ``rich`` table
(box ``HEAVY_HEAD``, ``show_lines=True``, cell padding ``(0, 1)``, one fixed-width
column per field). tinynet does not depend on ``rich``: this module mirrors the parts of
its layout that the summary uses, step for step, so the text comes out identical:

* the width: ``line_length`` or ``min(88, terminal columns - 4)``
  (``shutil.get_terminal_size``, so ``COLUMNS`` is respected);
* the columns: ``int(p * width)`` for ``p`` in 45 %, 80 %, 100 %; rich then fits the
  padded columns into ``width - 4`` (the borders) with its ``ratio_reduce`` rule;
* each cell word-wrapped as rich does (break at spaces; a word longer than the cell is
  cut with ``…``; ``Param #`` right aligned); body cells align to the top, header cells
  to the bottom;
* the footer: total / trainable / non-trainable parameters and their sizes (4 bytes a
  parameter, 1024-based units), plus ``Optimizer params`` once the optimizer holds state;
* lines longer than the console are cropped and the title and footer lines wrap at the
  console width (``COLUMNS``, else the terminal, else 80), as rich's console does.

The text is plain (rich's colours and bold only appear on an interactive terminal).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import unicodedata
from typing import Any, Callable, Sequence

from tinynet import tuning

__all__ = ["print_summary", "summary_text", "readable_memory_size", "format_shape",
           "column_widths"]

POSITIONS = (0.45, 0.80, 1.0)
HEADER = ("Layer (type)", "Output Shape", "Param #")
ALIGNMENT = ("left", "left", "right")
DEFAULT_LINE_LENGTH = 88
# a functional model that is not a plain chain: Keras adds the "Connected to" column
GRAPH_POSITIONS = (0.3, 0.56, 0.74, 1.0)
GRAPH_HEADER = (*HEADER, "Connected to")
GRAPH_ALIGNMENT = (*ALIGNMENT, "left")
GRAPH_LINE_LENGTH = 108

# rich's box drawings: rows are top, head, head_row, mid, row, foot_row, foot, bottom;
# columns are left, horizontal (or blank), divider, right.
_HEAVY_HEAD = ("┏━┳┓", "┃ ┃┃", "┡━╇┩", "│ ││", "├─┼┤", "├─┼┤", "│ ││", "└─┴┘")
_ASCII = ("+--+", "| ||", "|-+|", "| ||", "|-+|", "|-+|", "| ||", "+--+")
_TOP, _HEAD, _HEAD_ROW, _MID, _ROW, _FOOT_ROW, _FOOT, _BOTTOM = range(8)

_WORD = re.compile(r"\s*\S+\s*")
_TRAILING_SPACE = re.compile(r"\s+$")


# -- numbers and shapes ------------------------------------------------------------------
def readable_memory_size(size: float) -> str:
    """Keras's size text: ``0.00 B``, ``136.04 KB`` (1024-based, 2 decimals)."""
    units = ("B", "KB", "MB", "GB", "TB", "PB")
    for unit in units:
        if size / 1024 < 1:
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} {units[-1]}"


def format_shape(shape: Sequence) -> str:
    """Keras's shape text: ``(None, 26, 26, 32)``; a rank-1 shape prints as ``(None)``."""
    return "(" + ", ".join(str(d) for d in shape) + ")"


# -- rich's cell arithmetic ----------------------------------------------------------------
def _char_width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _cell_len(text: str) -> int:
    if text.isascii():
        return len(text)
    return sum(_char_width(ch) for ch in text)


def _set_cell_size(text: str, size: int) -> str:
    """Crops or pads ``text`` to exactly ``size`` cells."""
    out, used = [], 0
    for ch in text:
        w = _char_width(ch)
        if used + w > size:
            break
        out.append(ch)
        used += w
    return "".join(out) + " " * (size - used)


def _chop_cells(text: str, width: int) -> list[str]:
    lines, line, used = [], [], 0
    for ch in text:
        w = _char_width(ch)
        if used + w > width and line:
            lines.append("".join(line))
            line, used = [], 0
        line.append(ch)
        used += w
    if line:
        lines.append("".join(line))
    return lines


def _divide_line(text: str, width: int, fold: bool) -> list[int]:
    """rich's ``divide_line``: offsets at which to break ``text`` to fit ``width`` cells."""
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group(0)
        word_length = _cell_len(word.rstrip())
        if width - offset >= word_length:
            offset += _cell_len(word)
        elif word_length > width:
            if fold:
                folded = _chop_cells(word, width)
                for i, piece in enumerate(folded):
                    if start:
                        breaks.append(start)
                    if i == len(folded) - 1:
                        offset = _cell_len(piece)
                    else:
                        start += len(piece)
            else:
                if start:
                    breaks.append(start)
                offset = _cell_len(word)
        elif offset and start:
            breaks.append(start)
            offset = _cell_len(word)
    return breaks


def _truncate(line: str, width: int, overflow: str) -> str:
    if _cell_len(line) <= width:
        return line
    if overflow == "ellipsis":
        return _set_cell_size(line, width - 1) + "…"
    return _set_cell_size(line, width)


def _wrap(text: str, width: int, justify: str, overflow: str) -> list[str]:
    """rich's ``Text.wrap``: word-wrapped lines, justified ``left``/``right``/``default``.

    ``overflow`` is ``"fold"`` (long words split across lines; rich's console default) or
    ``"ellipsis"`` (long words cut with ``…``; rich's table-column default).
    """
    lines: list[str] = []
    for raw in text.split("\n"):
        bounds = [0, *_divide_line(raw, width, overflow == "fold"), len(raw)]
        for a, b in zip(bounds, bounds[1:]):
            line = raw[a:b]
            excess = len(line) - width
            if excess > 0:  # rstrip_end: drop trailing whitespace beyond the width
                trailing = _TRAILING_SPACE.search(line)
                if trailing is not None:
                    line = line[:len(line) - min(len(trailing.group(0)), excess)]
            if justify == "left":
                length = _cell_len(line)
                line = _truncate(line, width, overflow)
                if length < width:
                    line += " " * (width - length)
            elif justify == "right":
                line = _truncate(line.rstrip(), width, overflow)
                line = " " * (width - _cell_len(line)) + line
            else:
                line = _truncate(line, width, overflow)
            lines.append(line)
    return lines


def _ratio_reduce(total: int, ratios: list[int], maximums: list[int],
                  values: list[int]) -> list[int]:
    ratios = [r if m else 0 for r, m in zip(ratios, maximums)]
    total_ratio = sum(ratios)
    if not total_ratio:
        return values[:]
    remaining = total
    result = []
    for ratio, maximum, value in zip(ratios, maximums, values):
        if ratio and total_ratio > 0:
            distributed = min(maximum, round(ratio * remaining / total_ratio))
            result.append(value - distributed)
            remaining -= distributed
            total_ratio -= ratio
        else:
            result.append(value)
    return result


def _ratio_distribute(total: int, ratios: list[int]) -> list[int]:
    total_ratio = sum(ratios)
    remaining = total
    result = []
    for ratio in ratios:
        distributed = -(-ratio * remaining // total_ratio) if total_ratio > 0 else remaining
        result.append(distributed)
        total_ratio -= ratio
        remaining -= distributed
    return result


def column_widths(line_length: int, positions: Sequence[float] = POSITIONS) -> list[int]:
    """Keras's column widths for ``line_length``: ``int(p * line_length)`` differences.

    Raises:
        ValueError: a column would be narrower than 4 characters (as Keras).
    """
    widths, current = [], 0
    for pos in positions:
        width = int(pos * line_length) - current
        if width < 4:
            raise ValueError("Insufficient console width to print summary.")
        widths.append(width)
        current += width
    return widths


def _table_widths(line_length: int, widths: list[int]) -> list[int]:
    """rich's fitting of fixed-width padded columns into the table: widths incl. padding."""
    max_width = line_length - (len(widths) + 1)
    cells = [max(min(w + 2, max_width), 0) or 1 for w in widths]
    if sum(cells) > max_width:
        cells = _ratio_reduce(sum(cells) - max_width, [1] * len(cells), cells, cells)
        cells = [min(w + 2, c) if c >= 1 else 0 for w, c in zip(widths, cells)]
    if sum(cells) < max_width:
        cells = [c + p for c, p in zip(cells, _ratio_distribute(max_width - sum(cells), cells))]
    return cells


def _render_table(rows: list[Sequence[str]], line_length: int, box: tuple,
                  positions: Sequence[float] = POSITIONS, header: Sequence[str] = HEADER,
                  alignment: Sequence[str] = ALIGNMENT) -> list[str]:
    widths = _table_widths(line_length, column_widths(line_length, positions))

    def hline(level: int) -> str:
        left, horizontal, divider, right = box[level]
        return left + divider.join(horizontal * w for w in widths) + right

    def render_row(cells: Sequence[str], level: int, header: bool) -> list[str]:
        blocks = []
        for text, width, justify in zip(cells, widths, alignment):
            inner = max(width - 2, 0)
            block = [" " + line + " " for line in _wrap(text, inner, justify, "ellipsis")]
            blocks.append([_set_cell_size(line, width) for line in block])
        height = max(len(b) for b in blocks)
        for width, block in zip(widths, blocks):
            blank = [" " * width] * (height - len(block))
            block[:] = blank + block if header else block + blank
        left, _, divider, right = box[level]
        return [left + divider.join(b[i] for b in blocks) + right for i in range(height)]

    lines = [hline(_TOP)]
    lines += render_row(header, _HEAD, header=True)
    lines.append(hline(_HEAD_ROW))
    for i, row in enumerate(rows):
        last = i == len(rows) - 1
        lines += render_row(row, _FOOT if last else _MID, header=False)
        if not last:
            lines.append(hline(_ROW))
    lines.append(hline(_BOTTOM))
    return lines


# -- console facts ------------------------------------------------------------------------
def _console_width() -> int:
    """The width rich's console would use: ``COLUMNS``, else a terminal, else 80."""
    columns = tuning.env("COLUMNS")
    if columns is not None and columns.isdigit():
        return int(columns) or 80
    for fd in (0, 1, 2):
        try:
            return os.get_terminal_size(fd).columns or 80
        except (AttributeError, ValueError, OSError):
            continue
    return 80


def _ascii_only() -> bool:
    encoding = (getattr(sys.stdout, "encoding", None) or "utf-8").lower()
    return not encoding.startswith("utf")


# -- the model's rows -----------------------------------------------------------------------
def _shapes_text(shapes: list) -> str:
    """One shape as ``(None, 8)``; several as Keras prints a list: ``[(None, 3), (None, 2)]``."""
    texts = [format_shape(s) for s in shapes]
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


def _output_shape_text(layer: Any) -> str:
    """Keras's rule: the outputs of the layer's last call on symbolic tensors, else the
    output for the shape it was built for, else ``?``."""
    nodes = getattr(layer, "inbound_nodes", None)
    if nodes:
        return _shapes_text([t.shape for t in nodes[-1].outputs])
    shape_in = getattr(layer, "built_input_shape", None)
    if not getattr(layer, "built", False) or shape_in is None:
        return "?"
    out = layer.compute_output_shape(shape_in)
    return _shapes_text(out if isinstance(out, list) else [out])


def _connections(layer: Any, graph_nodes: set) -> str:
    """Keras's ``Connected to`` cell: ``name[node][tensor]`` of each input of each of the
    layer's calls in this model, comma-separated; ``-`` for an input layer."""
    refs = [f"{t.layer.name}[{t.node_index}][{t.tensor_index}]"
            for node in layer.inbound_nodes if id(node) in graph_nodes for t in node.inputs]
    return ", ".join(refs) if refs else "-"


def _layer_fields(layer: Any, graph_nodes: set | None) -> list[str]:
    # a functional model's class is "Functional" in Keras (keras.Model returns one)
    name = f"{layer.name} ({getattr(layer, 'keras_class_name', type(layer).__name__)})"
    built = getattr(layer, "built", None)
    if built is None:
        params = "0"
    elif not built:
        params = "0 (unbuilt)"
    else:
        params = f"{layer.count_params():,}"
    fields = [name, _output_shape_text(layer), params]
    if graph_nodes is not None:
        fields.append(_connections(layer, graph_nodes))
    return fields


def _graph_nodes(model: Any) -> set | None:
    """The ids of the model's nodes when its summary needs the ``Connected to`` column
    (a functional model that is not a plain chain, as Keras decides), else ``None``."""
    walk = getattr(model, "layer_graph", None)
    graph = walk() if walk is not None else None
    if graph is None or graph.chain:
        return None
    return graph.nodes


def summary_text(model: Any, line_length: int | None = None) -> str:
    """The summary of ``model`` as Keras 3 prints it (lines joined, ending with ``\\n``).

    Args:
        model: A ``Sequential`` or ``Model`` (anything with ``name``, ``layers`` and,
            optionally, a compiled ``optimizer`` with ``count_params()``).
        line_length: Total width; default ``min(88, terminal columns - 4)``, or 108
            instead of 88 for a functional model with the ``Connected to`` column.

    Raises:
        ValueError: the width leaves a column narrower than 4 characters.
    """
    graph_nodes = _graph_nodes(model)
    default = DEFAULT_LINE_LENGTH if graph_nodes is None else GRAPH_LINE_LENGTH
    if line_length is None:
        line_length = min(default, shutil.get_terminal_size().columns - 4)
    elif isinstance(line_length, bool) or not isinstance(line_length, int):
        raise TypeError(f"summary: line_length must be an int, got {line_length!r}")
    layers = list(model.layers)
    rows = [_layer_fields(layer, graph_nodes) for layer in layers]
    layout = ((POSITIONS, HEADER, ALIGNMENT) if graph_nodes is None
              else (GRAPH_POSITIONS, GRAPH_HEADER, GRAPH_ALIGNMENT))
    try:
        table = _render_table(rows, line_length, _ASCII if _ascii_only() else _HEAVY_HEAD,
                              *layout)
    except ValueError as exc:
        raise ValueError(f"summary: line_length must leave every column at least 4 characters "
                         f"wide, got {line_length}: {exc}") from None

    trainable = non_trainable = 0
    for layer in layers:
        if getattr(layer, "built", False):
            for p in layer.parameters():
                if p.trainable:
                    trainable += p.size
                else:
                    non_trainable += p.size
    optimizer = getattr(model, "optimizer", None)
    opt_count = int(optimizer.count_params()) if optimizer is not None else 0
    total = trainable + non_trainable + opt_count

    def count_line(label: str, count: int) -> str:
        return f" {label}: {count:,} ({readable_memory_size(count * 4)})"

    footer = [count_line("Total params", total), count_line("Trainable params", trainable),
              count_line("Non-trainable params", non_trainable)]
    if opt_count:
        footer.append(count_line("Optimizer params", opt_count))

    console = _console_width()
    out = _wrap(f'Model: "{model.name}"', console, "default", "fold")
    out += [_truncate(line, console, "crop") for line in table]
    for line in footer:
        out += _wrap(line, console, "default", "fold")
    return "\n".join(out) + "\n"


def print_summary(model: Any, line_length: int | None = None,
                  print_fn: Callable[[str], Any] | None = None) -> None:
    """Prints the summary to stdout, or hands it to ``print_fn`` in one call (as Keras 3).

    Args:
        model: The model.
        line_length: Total width; default ``min(88, terminal columns - 4)``.
        print_fn: Called once with the whole text (ending with a newline); default
            writes to ``sys.stdout``.
    """
    if print_fn is not None and not callable(print_fn):
        raise TypeError(f"summary: print_fn must be None or a callable, got {print_fn!r}")
    text = summary_text(model, line_length)
    if print_fn is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        print_fn(text)
