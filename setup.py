"""What goes into the wheel besides pyproject.toml's metadata: the ``ctxmodels`` package, and the explorer app
(the repository's ``app/``) as package data under ``ctxmodels/_explorer/app``, so that ``ctxmodels app`` starts it
from an installed wheel. The app stays where it is in the checkout (``streamlit run app/Home.py``); in the wheel
it is not imported by the package, only run by Streamlit (``ctxmodels/commands/app.py``)."""

from setuptools import find_packages, setup

APP = "ctxmodels._explorer.app"
core = find_packages(include=["ctxmodels", "ctxmodels.*"])
app = [APP + name[len("app"):] for name in find_packages(include=["app", "app.*"])]

setup(packages=core + app, package_dir={APP: "app"}, package_data={name: ["*.md"] for name in app})
