"""The version of qagen, in a module of its own so that any part can read it without importing the
package's face (`qagen/__init__.py`, which sits above every part)."""

__version__ = "0.1.0"
