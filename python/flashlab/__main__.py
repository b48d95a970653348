"""python -m flashlab COMMAND [options]: the `flashlab` command line that the package carries
(the same program as the C build's `flashlab`; `flashlab --help` lists its commands).  pip also
installs it as the console script `flashlab`.

The CLI is found as the binding finds it (flashlab.cli_path(): $FLASHLAB_CLI, else the one
beside the package), and it finds its gnuplot scripts in figures/ beside itself.  This process
becomes the CLI (exec): its exit status, output and signals are the CLI's own.
"""
import os
import sys


def main(argv=None):
    """Runs the CLI with argv (default: this process's arguments); does not return."""
    import flashlab
    args = sys.argv[1:] if argv is None else list(argv)
    cli = str(flashlab.cli_path())
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(cli, [cli, *args])


if __name__ == "__main__":
    main()
