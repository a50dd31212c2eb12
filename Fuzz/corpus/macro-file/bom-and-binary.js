function () { return 'ÿ' }
