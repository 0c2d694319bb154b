"""What a built-in tool tells its users (an error, git's summary) without the server's absolute paths or a
URL's credentials: the work tree is `.`, its folder `..`, any other absolute path its last part only
(`.../remote.git`), and `https://user:token@host` is `https://***@host`."""

import re
from pathlib import Path

# an absolute path: a `/` that ends no word, path or URL scheme, up to a character no path here holds
ABSOLUTE_PATH = re.compile(r"(?<![\w.~:/\\-])/[^\s'\"`:;,()<>\[\]{}|]*")
URL_USER_INFO = re.compile(r"(?<=://)[^/\s@]+@")


def _root_pattern(root: str) -> re.Pattern[str]:
    """`root` where it is a whole path, or the start of one (not `/work2` for `/work`)."""
    return re.compile(re.escape(root) + r"(?![^/\s'\"`:;,()<>\[\]{}|])")


def _shortened(match: re.Match[str]) -> str:
    last = match.group(0).rstrip("/").rsplit("/", 1)[-1]
    return f".../{last}" if last else "..."


def redacted(text: str, work_tree: str | Path) -> str:
    """`text` as a tool's user may see it: no absolute path of the server, no credentials of a URL."""
    tree = Path(work_tree).absolute()
    roots = {
        str(tree): ".",
        str(tree.resolve()): ".",
        str(tree.parent): "..",
        str(tree.resolve().parent): "..",
    }
    for root in sorted(roots, key=len, reverse=True):  # the work tree before its folder
        if root != "/":
            text = _root_pattern(root).sub(roots[root], text)
    return ABSOLUTE_PATH.sub(_shortened, URL_USER_INFO.sub("***@", text))
