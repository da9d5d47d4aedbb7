#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal, as a user at a terminal would see it.

usage: pty_screen.py SCREEN -- CMD [ARG...]

stdout and stderr of CMD both go to one pty (stdin stays as given). Everything CMD wrote is kept
in SCREEN.raw; SCREEN gets the lines as the terminal shows them at the end: '\\r' returns to the
first column, ESC[K erases to the end of the line, other escape sequences are dropped, and text
overwrites what is under the cursor. Exits with CMD's exit code (128+N for signal N).
"""
import os
import pty
import re
import sys


def render(data):
    lines, row, col = [[]], 0, 0
    i, n = 0, len(data)
    while i < n:
        c = data[i]
        if c == '\x1b':
            m = re.match(r'\x1b\[[0-9;?]*([A-Za-z])', data[i:])
            if m:
                if m.group(1) == 'K':
                    del lines[row][col:]
                i += m.end()
                continue
            i += 1
            continue
        if c == '\r':
            col = 0
        elif c == '\n':
            row += 1
            col = 0
            if row == len(lines):
                lines.append([])
        else:
            line = lines[row]
            while len(line) < col:
                line.append(' ')
            if col < len(line):
                line[col] = c
            else:
                line.append(c)
            col += 1
        i += 1
    text = [''.join(l) for l in lines]
    while text and text[-1] == '':
        text.pop()
    return text


def main():
    if len(sys.argv) < 4 or sys.argv[2] != '--':
        sys.exit(__doc__)
    screen, cmd = sys.argv[1], sys.argv[3:]
    stdin = os.dup(0)
    pid, fd = pty.fork()
    if pid == 0:
        # the child: stdout and stderr are the pty; stdin is kept from the parent (a file or pipe)
        os.dup2(stdin, 0)
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    chunks = []
    while True:
        try:
            b = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the pty
            break
        if not b:
            break
        chunks.append(b)
    _, status = os.waitpid(pid, 0)
    raw = b''.join(chunks).decode('utf-8', 'replace').replace('\r\n', '\n')
    with open(screen + '.raw', 'w') as f:
        f.write(raw)
    with open(screen, 'w') as f:
        for l in render(raw):
            f.write(l + '\n')
    sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


if __name__ == '__main__':
    main()
