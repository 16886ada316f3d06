"""``DirectGrade``: nbgrader's execute step, with every verdict computed by the grader and every byte of the
student's run in the sandbox.

After ``RestoreSubmission`` a notebook's cells are the release's, with only the answer cells' sources the
student's, and grading follows their plan (``nkilab.autograde.cells``): ``%%writefile`` answers are written by the grader,
grade cells that call the grading library run here, in the nbgrader process, outside any kernel of the
student's (each ``grade(...)`` grades its file in sandboxed child processes), and everything else belongs to the
notebook's Jupyter kernel.  That kernel is started only when a grade cell needs it -- a teacher's plain-Python
test of a plain-Python answer -- and then runs inside the sandbox (``nkilab.isolate.kernel_sandbox``): no course, no
gradebook, no seed, no environment of the grader's, its own process limit.  Whatever the student's code does in
that kernel (replace ``nkilab.grade``, print a forged grade record, write files, die) reaches only the cells the
kernel runs; its grade records are dropped, and a dead kernel costs the cells it would have run, nothing else.

The course's own notebooks (answers in ``%%writefile`` cells, grade cells calling ``grade``) need no kernel: a
notebook is graded in this warm process (NumPy and the simulator imported once, each question's inputs and
expected outputs drawn once per grading seed), with the outputs a kernel would give.  ``DirectGrade.direct=False``
starts the sandboxed kernel anyway (for the cells grading leaves to it).  The per-cell and per-notebook time
limits hold either way, and each notebook's grading ends by stopping the executor servers it started
(``nkilab.isolate.processes``): one student's questions share a server, never two students'.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from traitlets import Bool

from nkilab.autograde import cells
from nkilab.autograde.nbgrader_plugins import TimeLimitedExecute
from nkilab.intake.sanitize import is_answer
from nkilab.isolate import processes
from nkilab.isolate.kernel_sandbox import SandboxedKernelManager, kernel_limits

#: the error a cell left to a dead kernel shows
KERNEL_DIED = "the notebook's kernel died in an earlier cell, so this cell did not run"
#: what the grader keeps of a notebook kernel's outputs, in all (the student's prints: the rest is dropped, said so)
MAX_KERNEL_OUTPUT = 4 << 20
CAPPED = f"\n[the grader kept the first {MAX_KERNEL_OUTPUT >> 20} MiB of this notebook's output]\n"


class DirectGrade(TimeLimitedExecute):
    """Grade a notebook by its plan (see the module docstring)."""

    direct = Bool(True, help="start no Jupyter kernel unless a grade cell needs one").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict | None = None,
                   km: Any = None) -> tuple[NotebookNode, ResourcesDict | None]:
        where = ((resources or ResourcesDict()).get("metadata") or {}).get("path")
        if not where:
            raise ValueError("DirectGrade needs the notebook's folder (resources['metadata']['path'])")
        folder = Path(where)
        steps = cells.plan(nb)
        self._deadline = self._start_clock()
        self._kernel_output, self._output_capped = 0, False
        try:
            if cells.needs_kernel(steps) or not self.direct:
                NotebookClient.__init__(self, nb, km)  # as nbconvert's ExecutePreprocessor.preprocess does
                self.reset_execution_trackers()
                self._check_assign_resources(resources)
                with self.setup_kernel():
                    assert self.kc is not None
                    info = self.wait_for_reply(self.kc.kernel_info())
                    if info:
                        nb.metadata["language_info"] = info["content"]["language_info"]
                    self._run(nb, steps, folder, resources, kernel=True)
            else:
                self._run(nb, steps, folder, resources, kernel=False)
        finally:
            processes.stop_servers()
        return nb, resources

    def output(self, outs: list, msg: dict, display_id: str | None, cell_index: int) -> NotebookNode | None:
        """nbclient's handling of one output of the kernel's, until the notebook's kernel has printed
        ``MAX_KERNEL_OUTPUT`` bytes (a stream is cut there, and says so): an endless print must not fill the grader's
        memory."""
        if self._output_capped:
            return None
        content = msg.get("content", {})
        size = len(json.dumps(content, default=str))
        if self._kernel_output + size > MAX_KERNEL_OUTPUT:
            self._output_capped = True
            left = MAX_KERNEL_OUTPUT - self._kernel_output
            if msg.get("msg_type") != "stream" or not isinstance(content.get("text"), str) or left <= 0:
                outs.append(nbformat.v4.new_output("stream", name="stdout", text=CAPPED))
                return None
            msg = dict(msg, content=dict(content, text=content["text"][:left] + CAPPED))
        self._kernel_output += size
        return super().output(outs, msg, display_id, cell_index)

    def _stop_kernel(self) -> None:
        """End a kernel that stopped answering now, not when the notebook's last grade cell is done."""
        process = getattr(getattr(self.km, "provisioner", None), "process", None)
        if process is not None:  # bwrap, in a session of its own: its whole sandbox goes (nbclient's clean-up follows)
            processes.kill_group(process)

    def _start_clock(self) -> float | None:
        import time

        return time.monotonic() + self.notebook_timeout if self.notebook_timeout else None

    def create_kernel_manager(self) -> SandboxedKernelManager:
        """The notebook's kernel, in the sandbox, under the notebook's CPU time."""
        self.km = SandboxedKernelManager(config=self.config,
                                         limits=kernel_limits(int(self.notebook_timeout or 600) + 60))
        return self.km

    def _run(self, nb: NotebookNode, steps: list[cells.Step], folder: Path, resources: ResourcesDict | None, *,
             kernel: bool) -> None:
        import time

        namespace = cells.grader_namespace()
        dead = False
        for count, step in enumerate(steps, 1):
            cell = nb.cells[step.index]
            if step.kind is cells.Kind.KERNEL and not is_answer(cell):
                cells.run_teacher_imports(cell, namespace, folder)
            if step.kind is cells.Kind.GRADER:
                cell.execution_count = count
                if self._deadline is not None and time.monotonic() > self._deadline:
                    cell.outputs = [nbformat.v4.new_output("error", ename="TimeoutError", traceback=[],
                                                           evalue=f"the notebook's {self.notebook_timeout} s ran out")]
                else:
                    cell.outputs = cells.run_grader_cell(cell, namespace, folder, count)
                continue
            written = cells.write_answer(cell, folder) if step.kind is cells.Kind.WRITE else None
            if kernel and not dead:  # the kernel runs it too: its later cells may read the file
                try:
                    self.preprocess_cell(cell, resources, step.index)
                except Exception as err:  # a dead or stuck kernel: the student's cells, not the grading, end
                    dead = True
                    cell.outputs = [nbformat.v4.new_output("error", ename=type(err).__name__, traceback=[],
                                                           evalue="the notebook's kernel died or stopped answering")]
                    self._stop_kernel()
                cells.drop_records(cell)
            elif kernel:
                cell.outputs = [nbformat.v4.new_output("error", ename="DeadKernelError", evalue=KERNEL_DIED,
                                                       traceback=[])]
            if written is not None:
                cell.execution_count, cell.outputs = count, written
