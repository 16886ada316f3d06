"""Every error the simulator raises is whole sentences and ends by linking the course's own page on it.

neuronx-cc ended its messages with "Info on how to fix:" and a link to the NKI error guide that AWS removed in SDK
2.27; messages also ran their last sentence into that link ("...before returning it Info on how to fix: ...").
Here each catalogued id is raised for real, by the reproducer on its own page (``docs/errors/<id>.md``, the code the
site runs), in this process, and its message is checked: sentences, then the page's path in the repository.
"""

from __future__ import annotations

import re
import runpy
import sys
import warnings
from pathlib import Path

import pytest

from nkisim.core.errors import CATALOGUE, NKIError, error_page, make_error

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "docs" / "_ext"))
from nkidocs.errors import full_source  # noqa: E402  (the site's own way of making a page's kernel.py)

REPRODUCER = re.compile(r"```\{nki-reproducer\} (\w+)\n(.*?)```", re.S)
#: the one id a page shows as a warning (a deprecation neuronx-cc warns about), not raised
WARNS_ONLY = {"err_leading_dimension_of_tensor_must_be_partition"}


def raised(error_id: str, tmp_path: Path) -> NKIError:
    """The error the page's reproducer raises, run as the page's ``kernel.py`` in this process."""
    page = REPO / error_page(error_id)
    m = REPRODUCER.search(page.read_text())
    assert m and m.group(1) == error_id, page
    kernel = tmp_path / "kernel.py"
    kernel.write_text(full_source(m.group(2)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(NKIError) as info:
            runpy.run_path(str(kernel), run_name="__main__")
    assert info.value.error_id == error_id
    return info.value


def assert_whole_sentences_linking_home(error_id: str, text: str) -> None:
    tail = f" See {error_page(error_id)} for what it means and how to fix it."
    assert text.endswith(tail), text
    body = text[: -len(tail)]
    assert body and body[-1] in ".?!", text  # the compiler's message ends as a sentence before the link starts
    assert not re.search(r"[A-Za-z0-9)`'\]] +(Info|See|How) ", body), text  # no sentence run into the next
    assert "awsdocs" not in text and "readthedocs" not in text and "Info on how to fix" not in text, text
    assert (REPO / error_page(error_id)).is_file(), error_id


@pytest.mark.parametrize("error_id", sorted(CATALOGUE))
def test_every_error_is_sentences_linking_its_own_page(error_id, tmp_path):
    if error_id in WARNS_ONLY:  # raised by the catalogue all the same; its message is checked as built
        err = make_error(error_id, "leading dimension of the tensor must be the partition dimension")
    else:
        err = raised(error_id, tmp_path)
    assert_whole_sentences_linking_home(error_id, str(err))


def test_a_message_without_a_full_stop_gets_one_before_the_link():
    # the run-together case the issue quotes: a message that ended without a full stop
    err = make_error("err_mutable_parameter_not_returned", "a mutable parameter must be returned by the kernel "
                                                           "before returning it")
    assert str(err).startswith("a mutable parameter must be returned by the kernel before returning it. See ")
    assert_whole_sentences_linking_home("err_mutable_parameter_not_returned", str(err))
