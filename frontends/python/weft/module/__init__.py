"""weft.module (also weft.mod): MXNet 1.x's Module API. Module trains a Symbol on one or
several contexts; BucketingModule switches between symbols sharing one set of parameters;
SequentialModule chains modules; PythonModule/PythonLossModule compute in Python."""
from .base_module import BaseModule, ModuleStateError
from .module import Module
from .bucketing_module import BucketingModule
from .executor_group import DataParallelExecutorGroup
from .python_module import PythonModule, PythonLossModule
from .sequential_module import SequentialModule

__all__ = ["BaseModule", "Module", "BucketingModule", "DataParallelExecutorGroup", "ModuleStateError",
           "PythonModule", "PythonLossModule", "SequentialModule"]
