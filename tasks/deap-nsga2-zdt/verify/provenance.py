# Which DEAP python3 imports, and whether it is the distribution that pip
# has just installed (from the artifact's tree), not another copy found
# earlier on the path.
import importlib.metadata
import os

import deap
from deap.tools._hypervolume import hv

installed = importlib.metadata.distribution('deap').locate_file('deap/__init__.py')
imported = os.path.realpath(deap.__file__)
print('deap %s from %s' % (deap.__revision__, imported))
print('hv from %s' % hv.__file__)
print('imported is installed: %s' % (imported == os.path.realpath(str(installed))))
