"""Where libattncap was put when this package was installed. This file in the source tree says nothing;
`make install` writes LIBRARY (PREFIX/lib/libattncap.so.MAJOR) into the installed copy, and building
with pip from a checkout (setup.py) writes CHECKOUT (the repository, whose build/ holds the library)."""
LIBRARY = None
CHECKOUT = None
