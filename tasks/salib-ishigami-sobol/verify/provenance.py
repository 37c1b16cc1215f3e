# Which SALib python3 imports, and whether it is the distribution that pip
# has just installed (from the artifact's tree), not another copy found
# earlier on the path.
import importlib.metadata
import os

import SALib
from SALib.sample import saltelli

installed = importlib.metadata.distribution('SALib').locate_file('SALib/__init__.py')
imported = os.path.realpath(SALib.__file__)
print('SALib %s from %s' % (SALib.__version__, imported))
print('saltelli from %s' % saltelli.__file__)
print('imported is installed: %s' % (imported == os.path.realpath(str(installed))))
