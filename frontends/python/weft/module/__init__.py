"""weft.module (also weft.mod): MXNet 1.x's Module API. Module trains a Symbol on one or
several contexts; BucketingModule switches between symbols sharing one set of parameters."""
from .base_module import BaseModule, ModuleStateError
from .module import Module
from .bucketing_module import BucketingModule
from .executor_group import DataParallelExecutorGroup

__all__ = ["BaseModule", "Module", "BucketingModule", "DataParallelExecutorGroup", "ModuleStateError"]
