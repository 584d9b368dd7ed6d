// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {DutchAuction} from "./DutchAuction.sol";

/// @title Strict Dutch auction: the Dutch price, and a supply that falls linearly from the initial amount to 0.
/// @notice supply = max(sold, initialSupply * remaining / duration) in running seconds. The auction ends when
///         time is up or when sold reaches the supply; whatever was not sold is burned.
contract StrictDutchAuction is DutchAuction {
    /// @notice The supply the auction started with: the first implementation's name for `initialSupply`, which
    ///         its web client reads for this type.
    function initTokens() external view returns (uint256) {
        return initialSupply;
    }

    /// @notice Supply on sale at this moment (equal to what was sold once ended).
    function getTotalSupply() public view returns (uint256) {
        if (startTime == 0) return initialSupply;
        if (status == AuctionStatus.Ended) return soldProjectTokens;
        uint256 timeSupply = Math.mulDiv(initialSupply, _remainingActive(), duration);
        return timeSupply < soldProjectTokens ? soldProjectTokens : timeSupply;
    }

    function _available() internal view override returns (uint256) {
        return getTotalSupply() - soldProjectTokens;
    }

    function _placeBid(address bidder, uint256 amount) internal override {
        _setSupply(getTotalSupply());
        super._placeBid(bidder, amount);
    }

    function _finalize() internal override returns (uint256 finalPrice) {
        finalPrice = super._finalize();
        _setSupply(soldProjectTokens);
    }

    function _disposeUnsold(uint256 amount) internal override {
        if (amount > 0) projectToken.burn(amount);
    }

    function _setSupply(uint256 supply) private {
        if (supply == numberOfTokensToBeDistributed) return;
        numberOfTokensToBeDistributed = supply;
        emit VariableChange("numberOfTokensToBeDistributed", supply);
    }
}
